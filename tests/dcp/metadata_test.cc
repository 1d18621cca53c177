#include "dcp/metadata.h"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "metadata_builder.h"

namespace zerofold::dcp {
namespace {

using testing::BuildMetadata;
using testing::ChunkSpec;
using testing::EntrySpec;
using testing::Layout;
using torch::testing::PickleWriter;

std::vector<EntrySpec> TwoKeys() {
  EntrySpec w{"model.w", true, "bfloat16", {4, 6},
              {ChunkSpec{{0, 0}, {2, 6}, "__0_0.distcp", 10, 900, {}}, ChunkSpec{{2, 0}, {2, 6}, "__1_0.distcp", 0, 910, {}}}};
  EntrySpec s{"optimizer.state.w.step", true, "float32", {}, {ChunkSpec{{}, {}, "__0_0.distcp", 910, 400, {}}}};
  EntrySpec b{"optimizer.param_groups.0.lr", false, "", {}, {}};
  return {w, s, b};
}

void CheckTwoKeys(const Metadata& md) {
  REQUIRE_EQ(md.entries.size(), 3u);
  CHECK_EQ(md.entries[0].key, "model.w");
  CHECK(md.entries[0].is_tensor);
  CHECK_EQ(md.entries[0].dtype, torch::DType::kBFloat16);
  CHECK_EQ(md.entries[0].size, std::vector<int64_t>{4, 6});
  REQUIRE_EQ(md.entries[0].chunks.size(), 2u);
  CHECK_EQ(md.entries[0].chunks[1].offsets, std::vector<int64_t>{2, 0});
  CHECK_EQ(md.entries[0].chunks[1].sizes, std::vector<int64_t>{2, 6});
  CHECK_EQ(md.entries[1].dtype, torch::DType::kFloat32);
  CHECK(md.entries[1].size.empty());
  REQUIRE_EQ(md.entries[1].chunks.size(), 1u);
  CHECK(md.entries[1].chunks[0].offsets.empty());
  CHECK_FALSE(md.entries[2].is_tensor);
  REQUIRE_EQ(md.storage.size(), 4u);
  CHECK_EQ(md.storage[1].fqn, "model.w");
  CHECK_EQ(*md.storage[1].offset, std::vector<int64_t>{2, 0});
  CHECK_EQ(*md.storage[1].index, 1);
  CHECK_EQ(md.storage[1].relative_path, "__1_0.distcp");
  CHECK_EQ(md.storage[1].offset_in_file, 0u);
  CHECK_EQ(md.storage[1].length, 910u);
  CHECK_EQ(md.storage[2].offset_in_file, 910u);
  CHECK_FALSE(md.storage[3].offset.has_value());
  CHECK_FALSE(md.storage[3].index.has_value());
}

TEST_CASE("ReadMetadata: torch 1.13's module paths") {
  Result<Metadata> md = ReadMetadata(BuildMetadata(TwoKeys()));
  REQUIRE_MESSAGE(md.ok(), md.status().ToString());
  CheckTwoKeys(*md);
  CHECK_FALSE(md->schema_2x);
  CHECK_EQ(md->version, "");
}

TEST_CASE("ReadMetadata: torch 2.x paths, TensorProperties in either module, storage_meta, version, transforms") {
  for (bool tp_in_meta2 : {false, true}) {
    CAPTURE(tp_in_meta2);
    std::vector<EntrySpec> keys = TwoKeys();
    keys[0].chunks[1].transforms = {"stream.zstd/1"};
    Layout l;
    l.v2 = true;
    l.tp_in_meta2 = tp_in_meta2;
    l.storage_meta = true;
    Result<Metadata> md = ReadMetadata(BuildMetadata(keys, l));
    REQUIRE_MESSAGE(md.ok(), md.status().ToString());
    CheckTwoKeys(*md);
    CHECK(md->schema_2x);
    CHECK_EQ(md->version, "1.0.0");
    CHECK(md->storage[0].transforms.empty());
    CHECK_EQ(md->storage[1].transforms, std::vector<std::string>{"stream.zstd/1"});
  }
}

TEST_CASE("ReadMetadata: a real torch 1.13 .metadata (fixtures/dcp/dim1_ws3)") {
  std::ifstream f(std::string(ZF_SOURCE_ROOT) + "/fixtures/dcp/dim1_ws3/ckpt/.metadata", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  Result<Metadata> md = ReadMetadata(std::as_bytes(std::span(text.data(), text.size())));
  REQUIRE_MESSAGE(md.ok(), md.status().ToString());
  // info.json of the fixture: the keys, shapes and chunks torch wrote.
  REQUIRE_EQ(md->entries.size(), 5u);
  CHECK_EQ(md->entries[0].key, "attn.wq");
  CHECK_EQ(md->entries[0].size, std::vector<int64_t>{6, 7});
  REQUIRE_EQ(md->entries[0].chunks.size(), 3u);
  CHECK_EQ(md->entries[0].chunks[2].offsets, std::vector<int64_t>{0, 6});
  CHECK_EQ(md->entries[0].chunks[2].sizes, std::vector<int64_t>{6, 1});
  CHECK_EQ(md->entries[3].key, "cube");
  CHECK_EQ(md->entries[3].size, std::vector<int64_t>{2, 3, 8});
  CHECK_EQ(md->entries[4].key, "proj.weight");
  CHECK_EQ(md->entries[4].chunks.size(), 1u);
  CHECK_EQ(md->storage.size(), 13u);
}

TEST_CASE("ReadMetadata refuses hostile and foreign pickles, each with its own reason") {
  struct Case {
    const char* name;
    std::function<void(PickleWriter&)> extra;
    Code code;
    const char* message_part;
  } cases[] = {
      {"os.system", [](PickleWriter& w) { w.Str("x").Global("os", "system").Str("echo hi").Tuple1().Reduce(); },
       Code::kUnsafe, "os.system"},
      {"getattr on another object",
       [](PickleWriter& w) { w.Str("x").Global("builtins", "getattr").Global("torch", "Size").Str("mro").Tuple2().Reduce(); },
       Code::kUnsafe, "getattr"},
      {"1.12 schema class",
       [](PickleWriter& w) {
         w.Str("x").Global("torch.distributed._shard.checkpoint.metadata", "ShardedTensorStorageMetadata");
       },
       Code::kUnsupported, "1.12"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Layout l;
    l.extra_field = c.extra;
    Status s = ReadMetadata(BuildMetadata(TwoKeys(), l)).status();
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.record(), ".metadata");
    CHECK_NE(s.message().find(c.message_part), std::string::npos);
  }
}

TEST_CASE("ReadMetadata: wrong shapes of fields are corrupt, naming the key") {
  // A chunk's sizes that are a string.
  PickleWriter w;
  const std::string m = "torch.distributed._shard.checkpoint.metadata";
  w.Proto(4);
  testing::Begin(w, m, "Metadata");
  w.Str("state_dict_metadata").EmptyDict().Mark().Str("k");
  testing::Begin(w, m, "TensorStorageMetadata");
  w.Str("properties").Global("torch.distributed._shard.sharded_tensor.metadata", "TensorProperties").EmptyTuple().NewObj();
  w.Mark().Global("torch", "float32").Tuple().Build();
  w.Str("size");
  testing::Size(w, {2});
  w.Str("chunks").EmptyList().Mark();
  testing::Begin(w, m, "ChunkStorageMetadata");
  w.Str("offsets");
  testing::Size(w, {0});
  w.Str("sizes").Str("two");
  testing::End(w);
  w.Appends();
  testing::End(w);
  w.SetItems().Str("storage_data").EmptyDict();
  testing::End(w);
  w.Stop();
  Status s = ReadMetadata(w.bytes()).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message(), "k: chunk sizes is no torch.Size");

  // A 1.12 storage_key field.
  PickleWriter old;
  old.Proto(4);
  testing::Begin(old, m, "Metadata");
  old.Str("state_dict_metadata").EmptyDict().Mark().Str("k");
  testing::Begin(old, m, "BytesStorageMetadata");
  old.Str("storage_key").Str("k_0");
  testing::End(old);
  old.SetItems().Str("storage_data").EmptyDict();
  testing::End(old);
  old.Stop();
  s = ReadMetadata(old.bytes()).status();
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_NE(s.message().find("torch 1.12"), std::string::npos);

  // A root that is no Metadata.
  PickleWriter plain;
  plain.Proto(2).EmptyDict().Stop();
  CHECK_EQ(ReadMetadata(plain.bytes()).status().code(), Code::kCorrupt);
}

}  // namespace
}  // namespace zerofold::dcp
