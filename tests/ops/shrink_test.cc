#include "ops/shrink.h"

#include <doctest/doctest.h>

#include <string>

#include "io/mem_env.h"
#include "ops/fixtures.h"
#include "zip/archive.h"

namespace zerofold::ops {
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
  REQUIRE(ShrinkFile(&mem, "legacy.pt", "model.v2.pt", ShrinkOptions{}).ok());
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

}  // namespace
}  // namespace zerofold::ops
