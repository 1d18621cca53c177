#include "output/folder.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/mem_env.h"

namespace zerofold::output {
namespace {

TEST_CASE("EarlierSave lists a folder's saved weights of one format, in name order") {
  io::MemEnv env;
  for (const char* f : {"out/pytorch_model-00002-of-00002.bin", "out/pytorch_model.bin.index.json",
                        "out/pytorch_model-00001-of-00002.bin", "out/pytorch_model.bin", "out/model.safetensors",
                        "out/config.json", "out/sub/pytorch_model.bin"})
    env.SetFile(f, "x");
  CHECK_EQ(EarlierSave(&env, "out", ShardFormat::kTorch).value(),
           std::vector<std::string>{"out/pytorch_model-00001-of-00002.bin", "out/pytorch_model-00002-of-00002.bin",
                                    "out/pytorch_model.bin", "out/pytorch_model.bin.index.json"});
  CHECK_EQ(EarlierSave(&env, "out/", ShardFormat::kSafetensors).value(),
           std::vector<std::string>{"out/model.safetensors"});
  CHECK(EarlierSave(&env, "none", ShardFormat::kTorch).value().empty());
  CHECK(EarlierSave(&env, "out/config.json", ShardFormat::kTorch).value().empty());
}

TEST_CASE("RefuseInputTargets: a target that is an input by any name, with both paths") {
  io::MemEnv env;
  env.SetFile("in/a.bin", "a");
  env.SetFile("in/b.bin", "b");
  env.SetFile("out/other.bin", "o");
  REQUIRE(env.Link("in/b.bin", "out/b.bin"));
  const std::vector<std::string> inputs = {"in/a.bin", "in/b.bin"};
  struct Case {
    const char* name;
    std::vector<std::string> targets;
    std::string error;  // "" for OK
  } cases[] = {
      {"new files", {"out/a.bin", "out/new.bin"}, ""},
      {"other existing files", {"out/other.bin"}, ""},
      {"no targets", {}, ""},
      {"an input as written", {"out/a.bin", "in/a.bin"}, "in/a.bin: invalid argument: would replace an input"},
      {"an input spelled otherwise", {"./in//a.bin"}, "./in//a.bin: invalid argument: would replace an input: in/a.bin"},
      {"a hard link to an input", {"out/other.bin", "out/b.bin"},
       "out/b.bin: invalid argument: would replace an input: in/b.bin"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status s = RefuseInputTargets(&env, inputs, c.targets, "would replace an input");
    CHECK_EQ(s.ok() ? "" : s.ToString(), c.error);
    if (!s.ok()) CHECK_EQ(s.code(), Code::kInvalidArgument);
  }
  // Inputs that do not exist name no file.
  CHECK(RefuseInputTargets(&env, {"in/gone.bin"}, {"in/gone.bin"}, "x").ok());
}

}  // namespace
}  // namespace zerofold::output
