// dcp::ReadMetadata on Megatron-Core's `.metadata` (fixtures/megatron):
// mcore_data and all_local_plans accepted as inert data inside their own
// subtrees only.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "dcp/metadata.h"
#include "metadata_builder.h"

namespace zerofold::dcp {
namespace {

using testing::BuildMetadata;
using testing::ChunkSpec;
using testing::EntrySpec;
using testing::Layout;
using torch::testing::PickleWriter;

constexpr const char* kPlanner = "torch.distributed.checkpoint.planner";
constexpr const char* kMcore = "megatron.core.dist_checkpointing.strategies.torch";
constexpr const char* kMeta2 = "torch.distributed.checkpoint.metadata";

std::string ReadFixture(const std::string& relative) {
  std::ifstream f(std::string(ZF_SOURCE_ROOT) + "/fixtures/megatron/" + relative, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

Result<Metadata> ReadFixtureMetadata(const std::string& folder) {
  std::string text = ReadFixture(folder + "/.metadata");
  REQUIRE_FALSE(text.empty());
  return ReadMetadata(std::as_bytes(std::span(text.data(), text.size())));
}

TEST_CASE("ReadMetadata: Megatron-Core 0.12, 0.14, 0.15 and 0.16 .metadata (real fixtures)") {
  struct Case {
    const char* folder;
    bool mcore_root, mcore_data;
    const char* plan_class;
    size_t nd;
  } cases[] = {
      {"sharded_ws4/ckpt", false, false, "SavePlan", 0},
      {"v015_sharded_ws4/ckpt", true, true, "MCoreSavePlan", 2},
      {"v014_sharded_ws4/ckpt", false, true, "MCoreSavePlan", 2},
      {"v012_sharded_ws4/ckpt", false, true, "MCoreSavePlan", 2},
      {"gpt_tp2pp2_mlm/ckpt/iter_0000010", false, false, "SavePlan", 0},
      {"gpt_gqa_swiglu_nemo/ckpt/weights", false, false, "SavePlan", 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.folder);
    Result<Metadata> md = ReadFixtureMetadata(c.folder);
    REQUIRE_MESSAGE(md.ok(), md.status().ToString());
    CHECK(md->schema_2x);
    CHECK_EQ(md->mcore_metadata_root, c.mcore_root);
    CHECK_EQ(md->has_mcore_data, c.mcore_data);
    CHECK_EQ(md->local_plan_class, c.plan_class);
    CHECK_EQ(md->nd_reformulated.size(), c.nd);
    CHECK_GE(md->local_plans, 2u);
    CHECK_FALSE(md->entries.empty());
  }
  // info.json of v015_sharded_ws4: the N-D flattened keys' original shapes.
  Result<Metadata> md = ReadFixtureMetadata("v015_sharded_ws4/ckpt");
  REQUIRE(md.ok());
  std::map<std::string, std::vector<int64_t>> nd(md->nd_reformulated.begin(), md->nd_reformulated.end());
  CHECK_EQ(nd["optimizer.state.exp_avg.embedding.word_embeddings.weight"], std::vector<int64_t>{16, 8});
  CHECK_EQ(nd["optimizer.state.exp_avg.decoder.layers.mlp.linear_fc1.weight"], std::vector<int64_t>{2, 16, 8});
  CHECK_EQ(md->local_plans, 4u);
}

TEST_CASE("ReadMetadata: fixtures/megatron/bad's hostile .metadata are unsafe, naming what they smuggle") {
  struct Case {
    const char* folder;
    const char* names;
  } cases[] = {
      {"plans_eval", "builtins.eval"},
      {"plans_os_system", "posix.system"},
      {"plans_getattr_import", "builtins.__import__"},
      {"plan_outside_subtree", "torch.distributed.checkpoint.planner.SavePlan"},
      {"mcore_data_os_system", "posix.system"},
      {"mcore_metadata_eval", "builtins.eval"},
      {"mcore_saveplan_exec", "builtins.exec"},
      {"unlisted_megatron_class", "megatron.core.dist_checkpointing.strategies.torch.MCoreLoadPlanner"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.folder);
    Status s = ReadFixtureMetadata(std::string("bad/") + c.folder).status();
    CHECK_EQ(s.code(), Code::kUnsafe);
    CHECK_EQ(s.record(), ".metadata");
    CHECK_NE(s.message().find(c.names), std::string::npos);
  }
  // gap and overlap are well-formed pickles: the planner refuses them.
  CHECK(ReadFixtureMetadata("bad/gap").ok());
  CHECK(ReadFixtureMetadata("bad/overlap").ok());
}

std::vector<EntrySpec> OneKey() {
  return {EntrySpec{"w", true, "float32", {4}, {ChunkSpec{{0}, {4}, "__0_0.distcp", 0, 900, {}}}}};
}

// A WriteItem of a SavePlan as core 0.16 pickles it, its type an enum
// member in Python 3.13's form (WriteItemType(2)) or 3.11's (getattr).
void WriteItem(PickleWriter& w, bool getattr_enum) {
  testing::Begin(w, kPlanner, "WriteItem");
  w.Str("index");
  testing::Begin(w, kMeta2, "MetadataIndex");
  w.Str("fqn").Str("w").Str("offset");
  testing::Size(w, {0});
  w.Str("index").Int(0);
  testing::End(w);
  w.Str("type");
  if (getattr_enum) w.Global("builtins", "getattr").Global(kPlanner, "WriteItemType").Str("SHARD").Tuple2().Reduce();
  else w.Global(kPlanner, "WriteItemType").Int(2).Tuple1().Reduce();
  w.Str("tensor_data");
  testing::Begin(w, kPlanner, "TensorWriteData");
  w.Str("chunk");
  testing::Begin(w, kMeta2, "ChunkStorageMetadata");
  w.Str("offsets");
  testing::Size(w, {0});
  w.Str("sizes");
  testing::Size(w, {4});
  testing::End(w);
  w.Str("size");
  testing::Size(w, {4});
  testing::End(w);
  testing::End(w);
}

void Plans(PickleWriter& w, const char* plan_module, const char* plan_class, bool getattr_enum) {
  w.EmptyList().Mark();
  testing::Begin(w, plan_module, plan_class);
  w.Str("items").EmptyList().Mark();
  WriteItem(w, getattr_enum);
  w.Appends().Str("storage_data").None().Str("planner_data").EmptyDict();
  testing::End(w);
  w.Appends();
}

Status ReadWith(std::function<void(PickleWriter&)> extra) {
  Layout l;
  l.v2 = true;
  l.tp_in_meta2 = true;
  l.extra_field = std::move(extra);
  return ReadMetadata(BuildMetadata(OneKey(), l)).status();
}

TEST_CASE("ReadMetadata: planner classes are data inside all_local_plans and mcore_data, nowhere else") {
  for (bool getattr_enum : {false, true}) {
    CAPTURE(getattr_enum);
    CHECK(ReadWith([&](PickleWriter& w) {
            w.Str("all_local_plans");
            Plans(w, kPlanner, "SavePlan", getattr_enum);
          }).ok());
  }
  Layout l;
  l.v2 = true;
  l.tp_in_meta2 = true;
  l.extra_field = [](PickleWriter& w) {
    w.Str("mcore_data").EmptyDict().Mark().Str("w").EmptyDict().Mark().Str("nd_reformulated_orig_global_shape");
    w.Int(2).Int(2).Tuple2().SetItems().SetItems();
    w.Str("all_local_plans");
    Plans(w, kMcore, "MCoreSavePlan", false);
  };
  Result<Metadata> md = ReadMetadata(BuildMetadata(OneKey(), l));
  REQUIRE_MESSAGE(md.ok(), md.status().ToString());
  CHECK(md->has_mcore_data);
  REQUIRE_EQ(md->nd_reformulated.size(), 1u);
  CHECK_EQ(md->nd_reformulated[0].first, "w");
  CHECK_EQ(md->nd_reformulated[0].second, std::vector<int64_t>{2, 2});
  CHECK_EQ(md->local_plans, 1u);
  CHECK_EQ(md->local_plan_class, "MCoreSavePlan");

  struct Bad {
    const char* name;
    std::function<void(PickleWriter&)> extra;
    const char* message_part;
  } bad[] = {
      {"a SavePlan in another field",
       [](PickleWriter& w) {
         w.Str("planner_extra");
         Plans(w, kPlanner, "SavePlan", false);
       },
       "torch.distributed.checkpoint.planner.SavePlan, torch.distributed.checkpoint.planner.WriteItem"},
      {"the enum by getattr in another field",
       [](PickleWriter& w) {
         w.Str("x").Global("builtins", "getattr").Global(kPlanner, "WriteItemType").Str("SHARD").Tuple2().Reduce();
       },
       "torch.distributed.checkpoint.planner.WriteItemType outside mcore_data and all_local_plans"},
      {"os.system in a plan's planner_data",
       [](PickleWriter& w) {
         w.Str("all_local_plans").EmptyList().Mark();
         testing::Begin(w, kPlanner, "SavePlan");
         w.Str("planner_data").Global("os", "system").Str("true").Tuple1().Reduce();
         testing::End(w);
         w.Appends();
       },
       "os.system"},
      {"getattr of a dunder on the enum inside the plans",
       [](PickleWriter& w) {
         w.Str("all_local_plans").EmptyList().Mark();
         w.Global("builtins", "getattr").Global(kPlanner, "WriteItemType").Str("__class__").Tuple2().Reduce();
         w.Appends();
       },
       "builtins.getattr"},
      {"MCoreMetadata below the root",
       [](PickleWriter& w) { w.Str("mcore_data").Global(kMcore, "MCoreMetadata").EmptyTuple().NewObj(); },
       "MCoreMetadata"},
      {"a Megatron class outside the list inside mcore_data",
       [](PickleWriter& w) { w.Str("mcore_data").Global(kMcore, "MCoreLoadPlanner").EmptyTuple().NewObj(); },
       "MCoreLoadPlanner"},
  };
  for (const Bad& c : bad) {
    const std::string name = c.name;
    CAPTURE(name);
    Status s = ReadWith(c.extra);
    const std::string message = s.message();
    CAPTURE(message);
    CHECK_EQ(s.code(), Code::kUnsafe);
    CHECK_NE(message.find(c.message_part), std::string::npos);
  }
}

}  // namespace
}  // namespace zerofold::dcp
