#include "rewrite/request.h"

#include <doctest/doctest.h>

#include <string>

#include "io/mem_env.h"

namespace zerofold::rewrite {
namespace {

TEST_CASE("ResolveRequestTarget and IsSafetensorsInput") {
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

  auto kind = [&](const std::string& in, const std::string& out) {
    ShrinkRequest r;
    r.in = in;
    r.out = out;
    Result<output::Target> t = ResolveRequestTarget(&env, r, kFlagWords);
    REQUIRE(t.ok());
    return t->kind;
  };
  CHECK(kind("ckpt", "out") == output::TargetKind::kFolder);  // a folder IN, OUT names no format
  CHECK(kind("ckpt", "model.safetensors") == output::TargetKind::kFile);
  CHECK(kind("torch.pt", "out/") == output::TargetKind::kFolder);
  CHECK(kind("torch.pt", "existing") == output::TargetKind::kFolder);
  CHECK(kind("torch.pt", "out") == output::TargetKind::kFile);
  CHECK(kind("torch.pt", "-") == output::TargetKind::kStdout);

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
}  // namespace zerofold::rewrite
