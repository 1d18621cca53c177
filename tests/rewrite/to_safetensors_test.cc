#include "rewrite/to_safetensors.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "json/reader.h"
#include "model/hf_folder.h"
#include "safetensors/reader.h"
#include "zerofold/env.h"

namespace zerofold::rewrite {
namespace {

std::string Fixture(const std::string& rel) { return std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel; }

// A fresh folder under /tmp, removed with its files at the end of the test.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/zf_to_st_XXXXXX";
    path_ = mkdtemp(name) ? name : "";
    REQUIRE_FALSE(path_.empty());
  }
  ~TempDir() { Remove(path_); }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> Files() const {
    Result<std::vector<DirEntry>> entries = Env::Default()->ListDir(path_);
    REQUIRE(entries.ok());
    std::vector<std::string> names;
    for (const DirEntry& e : *entries) names.push_back(e.name);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  // Removes a folder with its files and folders.
  static void Remove(const std::string& path) {
    Result<std::vector<DirEntry>> entries = Env::Default()->ListDir(path);
    if (entries.ok()) {
      for (const DirEntry& e : *entries) {
        if (e.is_dir) Remove(path + "/" + e.name);
        else Env::Default()->RemoveFile(path + "/" + e.name).IgnoreError();
      }
    }
    rmdir(path.c_str());
  }

  std::string path_;
};

safetensors::File ReadBack(const std::string& path) {
  std::unique_ptr<RandomSource> src = Env::Default()->OpenRandom(path).value();
  Result<safetensors::File> f = safetensors::ReadHeader(*src);
  REQUIRE(f.ok());
  CHECK_EQ(f->file_size, src->size());
  return *f;
}

std::vector<std::string> Names(const safetensors::File& f) {
  std::vector<std::string> names;
  for (const safetensors::TensorInfo& t : f.tensors) names.push_back(t.name);
  return names;
}

TEST_CASE("a torch file becomes one safetensors file in the reference writer's order") {
  TempDir dir;
  ConvertOptions options;
  Result<ConvertReport> r = ConvertToSafetensors(Env::Default(), Fixture("torch/state_dict.pt"), dir.Path("a.st"), options);
  REQUIRE(r.ok());
  REQUIRE_EQ(r->files.size(), 1u);
  CHECK_EQ(r->files[0].path, dir.Path("a.st"));
  CHECK_EQ(r->files[0].tensors, 9u);
  CHECK(r->index.empty());
  safetensors::File f = ReadBack(dir.Path("a.st"));
  CHECK_EQ(r->files[0].bytes, f.file_size);
  // I64 ranks above F32; then names in byte order.
  CHECK_EQ(Names(f), std::vector<std::string>{"1.num_batches_tracked", "0.bias", "0.weight", "1.bias",
                                              "1.running_mean", "1.running_var", "1.weight", "3.bias", "3.weight"});
  CHECK_EQ(f.metadata, std::vector<std::pair<std::string, std::string>>{{"format", "pt"}});
  CHECK_EQ(f.header_size % 8, 0u);
  uint64_t data = 0;
  for (const safetensors::TensorInfo& t : f.tensors) data += t.byte_size();
  CHECK_EQ(r->total_size, data);
}

TEST_CASE("plain values follow the format key; --dedupe-tied records dropped names") {
  TempDir dir;
  ConvertOptions options;
  REQUIRE(ConvertToSafetensors(Env::Default(), Fixture("torch/optimizer_state.pt"), dir.Path("o.st"), options).ok());
  safetensors::File f = ReadBack(dir.Path("o.st"));
  REQUIRE_GE(f.metadata.size(), 3u);
  CHECK_EQ(f.metadata[0].first, "format");
  CHECK_EQ(f.metadata[1].first, "optimizer.param_groups");
  CHECK_EQ(f.FindMetadata("epoch").value(), "3");

  options.dedupe_tied = true;
  REQUIRE(ConvertToSafetensors(Env::Default(), Fixture("torch/tied_weights.pt"), dir.Path("t.st"), options).ok());
  safetensors::File t = ReadBack(dir.Path("t.st"));
  CHECK_EQ(Names(t), std::vector<std::string>{"embed.weight", "proj.bias", "proj.weight"});
  CHECK_EQ(t.FindMetadata(kTiedMetadataKey).value(),
           "{\"lm_head.weight\":\"embed.weight\",\"decoder.weight\":\"embed.weight\"}");
}

TEST_CASE("a dry run reports the files a real run writes, and writes nothing") {
  TempDir dir;
  ConvertOptions options;
  options.folder = true;
  options.max_shard_bytes = 20000;
  options.dry_run = true;
  const std::string in = Fixture("deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin");
  Result<ConvertReport> dry = ConvertToSafetensors(Env::Default(), in, dir.Path("out"), options);
  REQUIRE(dry.ok());
  CHECK(dir.Files().empty());
  options.dry_run = false;
  Result<ConvertReport> real = ConvertToSafetensors(Env::Default(), in, dir.Path("out"), options);
  REQUIRE(real.ok());
  REQUIRE_EQ(dry->files.size(), real->files.size());
  for (size_t i = 0; i < real->files.size(); ++i) {
    CHECK_EQ(dry->files[i].path, real->files[i].path);
    CHECK_EQ(dry->files[i].bytes, real->files[i].bytes);
    CHECK_EQ(ReadBack(real->files[i].path).file_size, real->files[i].bytes);
  }
  const size_t n = real->files.size();
  REQUIRE_GT(n, 1u);
  CHECK_EQ(real->files[0].path, dir.Path("out/") + output::ShardFileName(output::ShardFormat::kSafetensors, 1, n));
  CHECK_EQ(real->index, dir.Path("out/model.safetensors.index.json"));

  // The index: total_size and a weight_map naming every tensor once, sorted.
  Result<model::ShardIndex> index = model::ReadShardIndex(Env::Default(), real->index);
  REQUIRE(index.ok());
  CHECK_EQ(index->total_size, real->total_size);
  size_t tensors = 0;
  for (const OutputFile& f : real->files) tensors += f.tensors;
  CHECK_EQ(index->weight_map.size(), tensors);
  for (size_t i = 1; i < index->weight_map.size(); ++i) CHECK_LT(index->weight_map[i - 1].first, index->weight_map[i].first);
}

TEST_CASE("a tensor safetensors cannot hold is refused by name, and nothing is written") {
  TempDir dir;
  Result<ConvertReport> r = ConvertToSafetensors(Env::Default(), Fixture("torch/dtypes.pt"), dir.Path("d.st"), {});
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().code(), Code::kUnsupported);
  CHECK_EQ(r.status().record(), "complex128");
  CHECK_EQ(r.status().path(), Fixture("torch/dtypes.pt"));
  CHECK_EQ(r.status().message(), "complex128 tensors have no safetensors dtype");
  CHECK(dir.Files().empty());
  ConvertOptions folder_select;
  folder_select.select = "module";
  r = ConvertToSafetensors(Env::Default(), Fixture("deepspeed/bloat_zero2_ws2_bf16"), dir.Path("x"), folder_select);
  CHECK_EQ(r.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace zerofold::rewrite
