#include "megatron/folder.h"

#include <doctest/doctest.h>

#include <string>

#include "io/mem_env.h"

namespace zerofold::megatron {
namespace {

constexpr const char* kConfig =
    R"({"sharded_backend": "torch_dist", "sharded_backend_version": 1, "common_backend": "torch", "common_backend_version": 1})";

void TorchDist(io::MemEnv& env, const std::string& dir) {
  env.SetFile(dir + "/metadata.json", kConfig);
  env.SetFile(dir + "/.metadata", "x");
}

TEST_CASE("FindFolder: bare, Megatron-LM (tracker, release, --tag) and NeMo 2 layouts") {
  io::MemEnv env;
  TorchDist(env, "/bare");
  TorchDist(env, "/mlm/iter_0000010");
  TorchDist(env, "/mlm/iter_0000005");
  TorchDist(env, "/mlm/release");
  env.SetFile("/mlm/latest_checkpointed_iteration.txt", "10\n");
  TorchDist(env, "/nemo/weights");
  env.SetFile("/nemo/context/model.yaml", "x");

  Result<std::optional<Folder>> f = FindFolder(&env, "/bare", std::nullopt);
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  REQUIRE(f->has_value());
  CHECK_EQ((*f)->layout, Layout::kBare);
  CHECK_EQ((*f)->torch_dist, "/bare");
  CHECK_EQ((*f)->sharded_backend, "torch_dist");
  CHECK_EQ((*f)->sharded_backend_version, 1);
  CHECK_EQ((*f)->common_backend, "torch");

  struct Case {
    std::optional<std::string> tag;
    const char* folder;
  } tags[] = {{std::nullopt, "iter_0000010"}, {"5", "iter_0000005"}, {"0005", "iter_0000005"},
              {"release", "release"}, {"iter_0000005", "iter_0000005"}};
  for (const Case& c : tags) {
    CAPTURE(c.folder);
    f = FindFolder(&env, "/mlm", c.tag);
    REQUIRE_MESSAGE(f.ok(), f.status().ToString());
    REQUIRE(f->has_value());
    CHECK_EQ((*f)->layout, Layout::kMegatronLm);
    CHECK_EQ((*f)->tracker, "10");
    CHECK_EQ((*f)->iteration_folder, c.folder);
    CHECK_EQ((*f)->torch_dist, std::string("/mlm/") + c.folder);
  }
  f = FindFolder(&env, "/nemo", std::nullopt);
  REQUIRE(f.ok());
  REQUIRE(f->has_value());
  CHECK_EQ((*f)->layout, Layout::kNemo);
  CHECK_EQ((*f)->torch_dist, "/nemo/weights");

  // Not Megatron: another tool's metadata.json, a plain folder, a file.
  env.SetFile("/other/metadata.json", R"({"format": "pt"})");
  env.SetFile("/plain/.metadata", "x");
  for (const char* dir : {"/other", "/plain", "/mlm/latest_checkpointed_iteration.txt", "/missing"}) {
    CAPTURE(dir);
    f = FindFolder(&env, dir, std::nullopt);
    REQUIRE(f.ok());
    CHECK_FALSE(f->has_value());
  }
}

TEST_CASE("FindFolder refuses what it cannot read, each with its own code") {
  io::MemEnv env;
  TorchDist(env, "/bare");
  env.SetFile("/bad_tracker/latest_checkpointed_iteration.txt", "ten");
  env.SetFile("/gone/latest_checkpointed_iteration.txt", "7");
  env.SetFile("/legacy/latest_checkpointed_iteration.txt", "7");
  env.SetFile("/legacy/iter_0000007/mp_rank_00/model_optim_rng.pt", "x");
  env.SetFile("/zarr/metadata.json", R"({"sharded_backend": "zarr"})");
  struct Case {
    const char* dir;
    std::optional<std::string> tag;
    Code code;
    const char* path;
    const char* message;
  } cases[] = {
      {"/bad_tracker", std::nullopt, Code::kCorrupt, "/bad_tracker/latest_checkpointed_iteration.txt",
       "holds 'ten', not an iteration number or `release`"},
      {"/gone", std::nullopt, Code::kNotFound, "/gone/iter_0000007",
       "no folder iter_0000007 (named by latest_checkpointed_iteration.txt)"},
      {"/legacy", std::nullopt, Code::kUnsupported, "/legacy/iter_0000007",
       "no metadata.json: not a torch_dist checkpoint (Megatron-LM's legacy mp_rank_XX/ files are not read)"},
      {"/zarr", std::nullopt, Code::kUnsupported, "/zarr/metadata.json",
       "sharded_backend 'zarr' (only torch_dist checkpoints are read)"},
      {"/gone", "../x", Code::kInvalidArgument, "", "--tag '../x' is no iteration number, `release` or folder name in /gone"},
      {"/bare", "10", Code::kInvalidArgument, "/bare",
       "--tag picks an iteration of a Megatron-LM checkpoint folder (latest_checkpointed_iteration.txt); this is a "
       "bare torch_dist checkpoint"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.dir);
    Status s = FindFolder(&env, c.dir, c.tag).status();
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.path(), c.path);
    CHECK_EQ(s.message(), c.message);
  }
}

}  // namespace
}  // namespace zerofold::megatron
