#include "model/hf_folder.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../safetensors/test_files.h"
#include "io/mem_env.h"

namespace zerofold::model {
namespace {

using safetensors::testing::File;

// A safetensors shard holding F32 [1] tensors of `names`.
std::vector<std::byte> Shard(const std::vector<std::string>& names) {
  std::string header = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) header += ",";
    header += "\"" + names[i] + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * i) +
              "," + std::to_string(4 * i + 4) + "]}";
  }
  header += "}";
  return File(header, 4 * names.size());
}

constexpr const char* kIndex = "m/model.safetensors.index.json";

// Folder m: shard a holds x and y, shard b holds z, and the index `weight_map`.
void Folder(io::MemEnv& env, const std::string& weight_map) {
  env.SetFile("m/a.safetensors", Shard({"x", "y"}));
  env.SetFile("m/b.safetensors", Shard({"z"}));
  env.SetFile(kIndex, "{\"metadata\":{\"total_size\":12},\"weight_map\":{" + weight_map + "}}");
}

// ResolveModelPath's error on folder m, as the CLI prints it.
std::string Refusal(io::MemEnv& env) {
  Result<ModelFiles> files = ResolveModelPath(&env, "m", {});
  return files.ok() ? "ok" : files.status().ToString();
}

const std::string kRight = R"("x":"a.safetensors","y":"a.safetensors","z":"b.safetensors")";

TEST_CASE("an index that lists exactly what its shards hold resolves to its shards") {
  io::MemEnv env;
  Folder(env, kRight);
  Result<ModelFiles> files = ResolveModelPath(&env, "m", {});
  REQUIRE(files.ok());
  CHECK(files->files == std::vector<std::string>{"m/a.safetensors", "m/b.safetensors"});
  REQUIRE_EQ(files->indexes.size(), 1u);
  CHECK(CheckShardIndex(&env, files->indexes[0], "m", {}).ok());
}

TEST_CASE("an index naming a tensor its shard does not hold is corrupt") {
  io::MemEnv env;
  SUBCASE("held by no shard") {
    Folder(env, kRight + R"(,"ghost":"b.safetensors")");
    CHECK(Refusal(env) == std::string(kIndex) +
                              ": corrupt: weight_map names \"ghost\", which shard b.safetensors does not hold");
  }
  SUBCASE("held by another shard") {
    Folder(env, R"("x":"a.safetensors","y":"b.safetensors","z":"b.safetensors")");
    CHECK(Refusal(env) == std::string(kIndex) +
                              ": corrupt: weight_map names \"y\", which shard b.safetensors does not hold");
  }
}

TEST_CASE("a shard holding a tensor the index does not list is corrupt") {
  io::MemEnv env;
  Folder(env, R"("x":"a.safetensors","z":"b.safetensors")");
  CHECK(Refusal(env) == std::string(kIndex) +
                            ": corrupt: shard a.safetensors holds \"y\", which weight_map does not list");
}

TEST_CASE("a tensor held by two shards is corrupt") {
  io::MemEnv env;
  Folder(env, kRight);
  env.SetFile("m/b.safetensors", Shard({"y", "z"}));
  CHECK(Refusal(env) == std::string(kIndex) +
                            ": corrupt: shards a.safetensors and b.safetensors both hold \"y\"; weight_map names "
                            "a.safetensors");
}

TEST_CASE("an index listing a name twice is corrupt, naming both shards") {
  io::MemEnv env;
  Folder(env, kRight + R"(,"y":"b.safetensors")");
  const std::string text = *env.ReadSmallFile(kIndex, 1 << 20);
  const size_t second = text.rfind("\"y\"");
  CHECK(Refusal(env) == std::string(kIndex) + ": @ " + std::to_string(second) +
                            ": corrupt: weight_map lists \"y\" twice, in shard a.safetensors and in shard "
                            "b.safetensors");
  // Duplicates elsewhere keep the JSON reader's error.
  env.SetFile(kIndex, "{\"metadata\":{},\"metadata\":{},\"weight_map\":{" + kRight + "}}");
  CHECK(Refusal(env).find("corrupt: JSON: duplicate key \"metadata\"") != std::string::npos);
}

TEST_CASE("a shard that does not list is left to its reader") {
  io::MemEnv env;
  Folder(env, kRight + R"(,"ghost":"b.safetensors")");
  env.SetFile("m/b.safetensors", std::string_view("not a checkpoint"));
  // Its names are not checked; the other shard's are.
  Result<ModelFiles> files = ResolveModelPath(&env, "m", {});
  CHECK(files.ok());
  Folder(env, R"("x":"a.safetensors","ghost":"a.safetensors","z":"b.safetensors")");
  env.SetFile("m/b.safetensors", std::string_view("not a checkpoint"));
  CHECK(Refusal(env) == std::string(kIndex) +
                            ": corrupt: weight_map names \"ghost\", which shard a.safetensors does not hold");
  // A name a listed shard holds, which weight_map places in the one that does not list.
  Folder(env, R"("x":"a.safetensors","y":"b.safetensors","z":"b.safetensors")");
  env.SetFile("m/b.safetensors", std::string_view("not a checkpoint"));
  CHECK(Refusal(env) == std::string(kIndex) +
                            ": corrupt: shard a.safetensors holds \"y\", which weight_map places in shard "
                            "b.safetensors");
}

TEST_CASE("the check lists shards with the caller's limits") {
  io::MemEnv env;
  Folder(env, kRight + R"(,"ghost":"b.safetensors")");
  ListOptions tight;
  tight.max_safetensors_header = 8;  // no shard lists: nothing to check
  CHECK(ResolveModelPath(&env, "m", tight).ok());
  CHECK_FALSE(ResolveModelPath(&env, "m", {}).ok());
}

TEST_CASE("a file path is not checked against any index") {
  io::MemEnv env;
  Folder(env, R"("ghost":"a.safetensors")");
  Result<ModelFiles> files = ResolveModelPath(&env, "m/a.safetensors", {});
  REQUIRE(files.ok());
  CHECK(files->files == std::vector<std::string>{"m/a.safetensors"});
}

}  // namespace
}  // namespace zerofold::model
