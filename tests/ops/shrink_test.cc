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

}  // namespace
}  // namespace zerofold::ops
