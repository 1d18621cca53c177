#include "convert/request.h"

#include <doctest/doctest.h>

#include <string>

#include "io/mem_env.h"

namespace zerofold::convert {
namespace {

TEST_CASE("FormatByName: checkpoint extensions, a trailing .zst ignored") {
  CHECK(FormatByName("m.safetensors") == output::ShardFormat::kSafetensors);
  CHECK(FormatByName("a/b/m.safetensors.zst") == output::ShardFormat::kSafetensors);
  for (const char* torch : {"pytorch_model.bin", "x.pt", "x.pth", "x.ckpt", "x.pt.zst"}) {
    CAPTURE(torch);
    CHECK(FormatByName(torch) == output::ShardFormat::kTorch);
  }
  for (const char* none : {"out", "out/", "-", ".safetensors", "x.zst", "x.bin.gz", "x.weights"}) {
    CAPTURE(none);
    CHECK_FALSE(FormatByName(none).has_value());
  }
}

TEST_CASE("OutputIsFolder and IsSafetensorsInput") {
  io::MemEnv env;
  env.SetFile("ckpt/pytorch_model.bin.index.json", "{}");
  env.SetFile("st/model.safetensors", "");
  env.SetFile("both/model.safetensors", "");
  env.SetFile("both/pytorch_model.bin", "");
  env.SetFile("existing/x", "");
  std::string st_file(8, '\0');
  st_file[0] = 2;  // an 8-byte header length of 2, then "{}"
  env.SetFile("one.safetensors", st_file + "{}");
  env.SetFile("torch.pt", "PK\x03\x04 and more");

  CHECK(OutputIsFolder(&env, "ckpt", "out"));                 // a folder IN, OUT names no format
  CHECK_FALSE(OutputIsFolder(&env, "ckpt", "model.safetensors"));
  CHECK(OutputIsFolder(&env, "torch.pt", "out/"));
  CHECK(OutputIsFolder(&env, "torch.pt", "existing"));
  CHECK_FALSE(OutputIsFolder(&env, "torch.pt", "out"));

  auto safetensors = [&](const std::string& in) {
    Result<bool> r = IsSafetensorsInput(&env, in);
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(safetensors("one.safetensors"));
  CHECK(safetensors("st"));
  CHECK_FALSE(safetensors("both"));   // read as its torch checkpoint
  CHECK_FALSE(safetensors("ckpt"));
  CHECK_FALSE(safetensors("torch.pt"));
  CHECK_FALSE(safetensors("missing.pt"));  // the operation reports it
  CHECK_FALSE(safetensors("-"));
}

}  // namespace
}  // namespace zerofold::convert
