#include "rewrite/shrink.h"

#include <doctest/doctest.h>

#include <string>

#include "io/fault_env.h"
#include "io/mem_env.h"
#include "support/fixtures.h"
#include "zip/archive.h"

namespace zerofold::rewrite {
namespace {

using testing::Fixture;

TEST_CASE("StemOf names the top folder as torch.save does") {
  // What torch 1.13's torch.save(obj, NAME) writes as the top folder.
  const struct {
    const char* path;
    const char* stem;
  } kCases[] = {
      {"a/pytorch_model.bin", "pytorch_model"},
      {"model.v2.pt", "model.v2"},
      {"dir.d/noext", "noext"},
      {".hidden.pt", ".hidden"},
      {"x.", "x"},
      {"/abs/ckpt.pt", "ckpt"},
      {"", "archive"},
      {"-", "archive"},
      {"a/b.pt.zst", "b"},
      {"model.v2.pt.zst", "model.v2"},
  };
  for (const auto& c : kCases) {
    CAPTURE(std::string(c.path));
    CHECK_EQ(StemOf(c.path), c.stem);
  }
}

TEST_CASE("legacy input gets the output's stem as top folder; zip input keeps its own") {
  io::MemEnv mem;
  mem.SetFile("legacy.pt", Fixture("torch/legacy_state_dict.pt"));
  // Nothing to reclaim: a plain shrink copies it as it is; a cast rewrites it.
  Result<ShrinkReport> plain = ShrinkFile(&mem, "legacy.pt", "copy.pt", ShrinkOptions{});
  REQUIRE(plain.ok());
  CHECK(plain->copied_unchanged);
  CHECK(mem.GetFile("copy.pt").value() == Fixture("torch/legacy_state_dict.pt"));
  ShrinkOptions cast;
  cast.dtype = torch::DType::kFloat32;
  REQUIRE(ShrinkFile(&mem, "legacy.pt", "model.v2.pt", cast).ok());
  CHECK_EQ(zip::ReadArchiveBytes(mem.GetFile("model.v2.pt").value()).value().top_folder, "model.v2");
  mem.SetFile("zip.pt", Fixture("torch/views.pt"));
  REQUIRE(ShrinkFile(&mem, "zip.pt", "other.name.pt", ShrinkOptions{}).ok());
  CHECK_EQ(zip::ReadArchiveBytes(mem.GetFile("other.name.pt").value()).value().top_folder, "views");
}

TEST_CASE("verify compares a --select output with the input's subtree") {
  io::MemEnv mem;
  mem.SetFile("in.pt", Fixture("torch/optimizer_state.pt"));
  ShrinkOptions options;
  options.verify = true;
  options.select = "optimizer/state";
  Result<ShrinkReport> r = ShrinkFile(&mem, "in.pt", "out.pt", options);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->verified);
  CHECK_EQ(r->verified_tensors, r->tensors);
  CHECK_GT(r->tensors, 0u);
}

TEST_CASE("verify refuses what it cannot compare, before anything is written") {
  io::MemEnv mem;
  mem.SetFile("in.pt", Fixture("torch/state_dict.pt"));
  ShrinkOptions cast;
  cast.verify = true;
  cast.dtype = torch::DType::kBFloat16;
  Status s = ShrinkFile(&mem, "in.pt", "out.pt", cast).status();
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "--verify compares tensors bit for bit; --dtype changes them");
  ShrinkOptions zst;
  zst.verify = true;
  s = ShrinkFile(&mem, "in.pt", "out.pt.zst", zst).status();
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.ToString(), "out.pt.zst: invalid argument: --verify reads the output back; a stream ('-', .zst) cannot be");
  CHECK_EQ(mem.Files(), std::vector<std::string>{"in.pt"});
}


TEST_CASE("a pytorch_model.bin beside a shard index is shrunk too, and left out of total_size") {
  const char* const names[] = {"config.json", "pytorch_model-00001-of-00003.bin", "pytorch_model-00002-of-00003.bin",
                               "pytorch_model-00003-of-00003.bin", "pytorch_model.bin.index.json"};
  io::MemEnv plain, beside;
  for (const char* n : names) {
    plain.SetFile(std::string("in/") + n, Fixture(std::string("hf/bloated/") + n));
    beside.SetFile(std::string("in/") + n, Fixture(std::string("hf/bloated/") + n));
  }
  // A stale single file: a copy of the first (bloated) shard.
  const std::vector<std::byte> single = Fixture("hf/bloated/pytorch_model-00001-of-00003.bin");
  beside.SetFile("in/pytorch_model.bin", single);
  Result<FolderReport> a = ShrinkFolder(&plain, "in", "out", ShrinkOptions{});
  Result<FolderReport> b = ShrinkFolder(&beside, "in", "out", ShrinkOptions{});
  REQUIRE(a.ok());
  REQUIRE_MESSAGE(b.ok(), b.status().ToString());
  CHECK_EQ(b->shards.size(), a->shards.size() + 1);
  CHECK_EQ(b->total_size, a->total_size);
  CHECK(beside.GetFile("out/pytorch_model.bin.index.json") == plain.GetFile("out/pytorch_model.bin.index.json"));
  // Shrunk exactly as the file alone would be, not copied.
  io::MemEnv alone;
  alone.SetFile("pytorch_model.bin", single);
  REQUIRE(ShrinkFile(&alone, "pytorch_model.bin", "small.bin", ShrinkOptions{}).ok());
  const std::optional<std::vector<std::byte>> got = beside.GetFile("out/pytorch_model.bin");
  REQUIRE(got.has_value());
  CHECK(*got == alone.GetFile("small.bin").value());
  CHECK_LT(got->size(), single.size());
  for (const std::string& copied : b->copied) CHECK_NE(copied, "pytorch_model.bin");
}

TEST_CASE("a dry run of a folder in place writes nothing, not even the index") {
  const char* const names[] = {"config.json", "pytorch_model-00001-of-00003.bin", "pytorch_model-00002-of-00003.bin",
                               "pytorch_model-00003-of-00003.bin", "pytorch_model.bin.index.json"};
  io::MemEnv mem;
  for (const char* n : names) mem.SetFile(std::string("in/") + n, Fixture(std::string("hf/bloated/") + n));
  io::FaultEnv counting(&mem);
  ShrinkOptions dry;
  dry.dry_run = true;
  Result<FolderReport> r = ShrinkFolder(&counting, "in", "in", dry);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK_EQ(r->shards.size(), 3u);
  CHECK_EQ(counting.commits(), 0u);
  CHECK_EQ(counting.bytes_appended(), 0u);
  for (const char* n : names) CHECK(mem.GetFile(std::string("in/") + n) == Fixture(std::string("hf/bloated/") + n));
}

}  // namespace
}  // namespace zerofold::rewrite
