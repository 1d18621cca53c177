#include "merge/merge.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gather/verify.h"
#include "gather/write.h"
#include "safetensors/reader.h"
#include "torch/checkpoint.h"
#include "torch/read.h"
#include "torch/state_dict.h"
#include "zero/load.h"
#include "zerofold/env.h"

namespace zerofold::merge {
namespace {

namespace fs = std::filesystem;
using gather::ArchiveStem;
using torch::ContiguousStrides;

const char* const kCases[] = {"zero1_ws2_fp16", "zero1_ws3_bf16_bf16optimizer", "zero2_ws3_bf16", "zero3_ws3_fp16",
                              "zero3_ws4_fp32"};

std::string FixtureDir(const std::string& name) {
  return std::string(ZF_SOURCE_ROOT) + "/fixtures/deepspeed/" + name;
}

// A temp folder removed at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "zf_merge_test_XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// Copies a fixture's checkpoint folder (latest + tag folder) into dir.
std::string CopyCheckpoint(const std::string& fixture, const TempDir& dir) {
  std::string to = dir / "ckpt";
  fs::copy(FixtureDir(fixture) + "/ckpt", to, fs::copy_options::recursive);
  return to;
}

// Each tensor's dtype, shape, storage key and xxh3-128 of its bytes, by name.
struct Seen {
  torch::DType dtype;
  std::vector<int64_t> shape;
  std::string storage;
  torch::Hash128 digest;
};

std::map<std::string, Seen> ReadTorch(const std::string& path) {
  Env* env = Env::Default();
  Result<std::unique_ptr<RandomSource>> src = env->OpenRandom(path);
  REQUIRE_MESSAGE(src.ok(), src.status().ToString());
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(**src);
  REQUIRE_MESSAGE(ckpt.ok(), ckpt.status().ToString());
  std::map<std::string, Seen> out;
  for (const torch::Tensor& t : ckpt->tensors) {
    REQUIRE_EQ(t.stride, ContiguousStrides(t.shape));  // ours and ground truth's alike
    std::vector<std::byte> buffer(4096);
    Result<torch::Hash128> digest = torch::TensorDigest(**src, *ckpt, t, buffer);
    REQUIRE(digest.ok());
    out[t.name] = Seen{t.dtype, t.shape, ckpt->storages[t.storage].key, *digest};
  }
  return out;
}

std::map<std::string, Seen> ReadSafetensors(const std::string& path) {
  Env* env = Env::Default();
  Result<std::unique_ptr<RandomSource>> src = env->OpenRandom(path);
  REQUIRE(src.ok());
  Result<safetensors::File> file = safetensors::ReadHeader(**src);
  REQUIRE_MESSAGE(file.ok(), file.status().ToString());
  std::map<std::string, Seen> out;
  for (const safetensors::TensorInfo& t : file->tensors) {
    std::vector<std::byte> bytes(t.byte_size());
    REQUIRE(ReadExactAt(**src, t.data_offset, bytes).ok());
    torch::Xxh3Hasher h;
    h.Update(bytes);
    Seen s{*t.torch_dtype, {}, "", h.Digest()};
    for (uint64_t d : t.shape) s.shape.push_back(static_cast<int64_t>(d));
    out[t.name] = s;
  }
  return out;
}

void CheckEqualToGroundTruth(const std::map<std::string, Seen>& got, const std::string& fixture) {
  std::map<std::string, Seen> want = ReadTorch(FixtureDir(fixture) + "/ground_truth.pt");
  REQUIRE_EQ(got.size(), want.size());
  for (const auto& entry : want) {
    // Plain references: clang 14 cannot capture structured bindings (CAPTURE).
    const std::string& name = entry.first;
    const Seen& w = entry.second;
    CAPTURE(name);
    auto g = got.find(name);
    REQUIRE(g != got.end());
    CHECK_EQ(g->second.dtype, w.dtype);
    CHECK_EQ(g->second.shape, w.shape);
    CHECK_EQ(g->second.digest.Hex(), w.digest.Hex());
  }
}

TEST_CASE("merge of every real DeepSpeed checkpoint equals ground_truth.pt, tie sharing one storage") {
  for (const char* name : kCases) {
    CAPTURE(name);
    TempDir tmp;
    MergeOptions options;
    options.verify = true;
    options.buffer_bytes = 4096;  // many chunks per tensor
    Result<MergeReport> r = MergeCheckpoint(Env::Default(), FixtureDir(name) + "/ckpt", tmp / "model.bin", options);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK(r->verified);
    CHECK_EQ(r->verified_tensors, 31u);
    CHECK_EQ(r->files.size(), 1u);
    CHECK_EQ(r->files[0].bytes, fs::file_size(tmp / "model.bin"));
    CHECK_EQ(r->ties, 1u);
    CHECK_EQ(r->frozen_params, 1u);
    CHECK_EQ(r->buffers, 2u);
    CHECK_EQ(r->params, 27u);
    std::map<std::string, Seen> got = ReadTorch(tmp / "model.bin");
    CheckEqualToGroundTruth(got, name);
    CHECK_EQ(got["lm_head.weight"].storage, got["transformer.wte.weight"].storage);
  }
}

TEST_CASE("merge to safetensors: every name its own copy, equal to ground truth") {
  for (const char* name : kCases) {
    CAPTURE(name);
    TempDir tmp;
    MergeOptions options;
    options.format = MergeFormat::kSafetensors;
    options.verify = true;
    Result<MergeReport> r = MergeCheckpoint(Env::Default(), FixtureDir(name) + "/ckpt", tmp / "out", options);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    REQUIRE_EQ(r->files.size(), 1u);
    CHECK_EQ(r->files[0].path, tmp / "out/model.safetensors");
    CheckEqualToGroundTruth(ReadSafetensors(tmp / "out/model.safetensors"), name);
  }
}

TEST_CASE("merge into shards: each tie in its owner's shard, all names across shards, the index last") {
  TempDir tmp;
  MergeOptions options;
  options.max_shard_bytes = 40000;
  options.verify = true;
  Result<MergeReport> r = MergeCheckpoint(Env::Default(), FixtureDir("zero3_ws3_fp16") + "/ckpt", tmp / "out", options);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  REQUIRE_GT(r->files.size(), 2u);
  CHECK_EQ(r->index, tmp / "out/pytorch_model.bin.index.json");
  std::map<std::string, Seen> all;
  for (size_t k = 0; k < r->files.size(); ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "pytorch_model-%05zu-of-%05zu.bin", k + 1, r->files.size());
    CHECK_EQ(r->files[k].path, tmp / ("out/" + std::string(name)));
    std::map<std::string, Seen> shard = ReadTorch(r->files[k].path);
    if (shard.count("lm_head.weight")) {
      REQUIRE(shard.count("transformer.wte.weight"));
      CHECK_EQ(shard["lm_head.weight"].storage, shard["transformer.wte.weight"].storage);
    }
    all.insert(shard.begin(), shard.end());
  }
  CheckEqualToGroundTruth(all, "zero3_ws3_fp16");
  CHECK(fs::exists(r->index));
}

TEST_CASE("ArchiveStem cuts the last extension, as torch.save names the top folder") {
  CHECK_EQ(ArchiveStem("out/pytorch_model.bin"), "pytorch_model");
  CHECK_EQ(ArchiveStem("model.v2.bin"), "model.v2");  // torch.save: 'model.v2/data.pkl'
  CHECK_EQ(ArchiveStem("a.b.c.pt"), "a.b.c");
  CHECK_EQ(ArchiveStem("/x/y/pytorch_model-00001-of-00002.bin"), "pytorch_model-00001-of-00002");
  CHECK_EQ(ArchiveStem("noext"), "noext");
  CHECK_EQ(ArchiveStem("dir/.bin"), "");
}

TEST_CASE("merge --dry-run writes nothing and sizes the output exactly") {
  TempDir tmp;
  MergeOptions options;
  options.dry_run = true;
  Result<MergeReport> dry = MergeCheckpoint(Env::Default(), FixtureDir("zero2_ws3_bf16") + "/ckpt", tmp / "m.bin", options);
  REQUIRE(dry.ok());
  CHECK_FALSE(fs::exists(tmp / "m.bin"));
  options.dry_run = false;
  Result<MergeReport> real = MergeCheckpoint(Env::Default(), FixtureDir("zero2_ws3_bf16") + "/ckpt", tmp / "m.bin", options);
  REQUIRE(real.ok());
  CHECK_EQ(dry->files[0].bytes, fs::file_size(tmp / "m.bin"));
  CHECK_EQ(dry->tensor_bytes, real->tensor_bytes);
}

TEST_CASE("merge refuses to replace an output without force, and replaces it with force") {
  TempDir tmp;
  { std::ofstream(tmp / "m.bin") << "old"; }
  MergeOptions options;
  Status s = MergeCheckpoint(Env::Default(), FixtureDir("zero1_ws2_fp16") + "/ckpt", tmp / "m.bin", options).status();
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.path(), tmp / "m.bin");
  CHECK_EQ(fs::file_size(tmp / "m.bin"), 3u);
  options.force = true;
  REQUIRE(MergeCheckpoint(Env::Default(), FixtureDir("zero1_ws2_fp16") + "/ckpt", tmp / "m.bin", options).ok());
  CHECK_GT(fs::file_size(tmp / "m.bin"), 100000u);
}

TEST_CASE("a folder OUT holding an earlier save: refused, or replaced whole with force") {
  TempDir tmp;
  const std::string out = tmp / "out";
  MergeOptions sharded;
  sharded.max_shard_bytes = 40000;
  Result<MergeReport> first = MergeCheckpoint(Env::Default(), FixtureDir("zero3_ws3_fp16") + "/ckpt", out, sharded);
  REQUIRE(first.ok());
  REQUIRE_EQ(first->files.size(), 6u);
  { std::ofstream(out + "/config.json") << "{}"; }

  MergeOptions one;  // unsharded now: pytorch_model.bin is new, the shards are not targets
  Status s = MergeCheckpoint(Env::Default(), FixtureDir("zero3_ws3_fp16") + "/ckpt", out, one).status();
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.path(), out + "/pytorch_model-00001-of-00006.bin");
  CHECK_EQ(s.message(), "is part of an earlier save in the output folder; use --force to replace it");
  one.force = true;
  Result<MergeReport> second = MergeCheckpoint(Env::Default(), FixtureDir("zero3_ws3_fp16") + "/ckpt", out, one);
  REQUIRE_MESSAGE(second.ok(), second.status().ToString());
  std::vector<std::string> removed = {"pytorch_model-00001-of-00006.bin", "pytorch_model-00002-of-00006.bin",
                                      "pytorch_model-00003-of-00006.bin", "pytorch_model-00004-of-00006.bin",
                                      "pytorch_model-00005-of-00006.bin", "pytorch_model-00006-of-00006.bin",
                                      "pytorch_model.bin.index.json"};
  CHECK_EQ(second->removed, removed);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK_EQ(left, std::vector<std::string>{"config.json", "pytorch_model.bin"});
  CheckEqualToGroundTruth(ReadTorch(out + "/pytorch_model.bin"), "zero3_ws3_fp16");
}

TEST_CASE("FindTagFolder: latest, --tag, a tag folder itself, and what is no checkpoint") {
  TempDir tmp;
  std::string ckpt = CopyCheckpoint("zero1_ws2_fp16", tmp);
  Env* env = Env::Default();
  Result<std::string> f = zero::FindTagFolder(env, ckpt, std::nullopt);
  REQUIRE(f.ok());
  CHECK_EQ(*f, ckpt + "/global_step2");
  f = zero::FindTagFolder(env, ckpt + "/global_step2", std::nullopt);
  REQUIRE(f.ok());
  CHECK_EQ(*f, ckpt + "/global_step2");
  f = zero::FindTagFolder(env, ckpt, std::string("global_step2"));
  REQUIRE(f.ok());

  struct Case {
    const char* name;
    std::string dir;
    std::optional<std::string> tag;
    std::string latest;  // written to ckpt/latest first unless empty
    Code code;
    std::string path;
    std::string message;
  } cases[] = {
      {"no such tag", ckpt, "global_step9", "", Code::kNotFound, ckpt,
       "--tag names tag 'global_step9', which is no folder here (tag folders: global_step2)"},
      {"tag with a slash", ckpt, "../x", "", Code::kInvalidArgument, ckpt, "--tag '../x' is not a folder name"},
      {"latest names no folder", ckpt, std::nullopt, "global_step7\n", Code::kNotFound, ckpt,
       "'latest' names tag 'global_step7', which is no folder here (tag folders: global_step2)"},
      {"latest escapes", ckpt, std::nullopt, "../../etc", Code::kCorrupt, ckpt + "/latest",
       "names '../../etc', which is not a single folder name"},
      {"latest empty", ckpt, std::nullopt, " \n", Code::kCorrupt, ckpt + "/latest",
       "names '', which is not a single folder name"},
      {"missing folder", tmp / "nope", std::nullopt, "", Code::kNotFound, tmp / "nope", "no such folder"},
      {"a file", ckpt + "/latest", std::nullopt, "", Code::kInvalidArgument, ckpt + "/latest",
       "is a file; merge takes a DeepSpeed checkpoint folder"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    if (!c.latest.empty()) std::ofstream(ckpt + "/latest", std::ios::trunc) << c.latest;
    Status s = zero::FindTagFolder(env, c.dir, c.tag).status();
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.path(), c.path);
    CHECK_EQ(s.message(), c.message);
    std::ofstream(ckpt + "/latest", std::ios::trunc) << "global_step2";
  }

  fs::remove(ckpt + "/latest");
  Status s = zero::FindTagFolder(env, ckpt, std::nullopt).status();
  CHECK_EQ(s.code(), Code::kNotFound);
  CHECK_EQ(s.message(), "no 'latest' file to name the tag; tag folders here: global_step2 (use --tag)");
  fs::create_directory(tmp / "empty");
  s = zero::FindTagFolder(env, tmp / "empty", std::nullopt).status();
  CHECK_EQ(s.code(), Code::kNotFound);
  CHECK_EQ(s.message(), "not a DeepSpeed checkpoint folder: no 'latest' file, no *_model_states.pt file, no tag folder");
}

TEST_CASE("merge errors name the file: a missing rank, an extra rank, a tensor-parallel file") {
  TempDir tmp;
  std::string ckpt = CopyCheckpoint("zero2_ws3_bf16", tmp);
  std::string tag = ckpt + "/global_step2";
  MergeOptions options;
  options.dry_run = true;
  Env* env = Env::Default();

  fs::rename(tag + "/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt", tmp / "rank1.pt");
  Status s = MergeCheckpoint(env, ckpt, tmp / "o.bin", options).status();
  CHECK_EQ(s.code(), Code::kNotFound);
  CHECK_EQ(s.path(), tag);
  CHECK_EQ(s.message(), "optim states of rank 1 missing: found ranks 0, 2");

  // Rank 1 back, and a fourth rank for a world of three.
  fs::rename(tmp / "rank1.pt", tag + "/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt");
  fs::copy_file(tag + "/bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt",
                tag + "/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt");
  s = MergeCheckpoint(env, ckpt, tmp / "o.bin", options).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), tag + "/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt");
  CHECK_EQ(s.message(),
           "partition_count says 3 ranks, found optim states of 4 (ranks 0-3): rank 3 and up are not part of this "
           "checkpoint");
  fs::remove(tag + "/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt");

  { std::ofstream(tag + "/zero_pp_rank_0_mp_rank_01_optim_states.pt"); }
  s = MergeCheckpoint(env, ckpt, tmp / "o.bin", options).status();
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.path(), tag + "/zero_pp_rank_0_mp_rank_01_optim_states.pt");
  CHECK_EQ(s.message(),
           "tensor-parallel checkpoint (zero_pp_rank_0_mp_rank_01_optim_states.pt): only mp_rank_00 is supported");
}

TEST_CASE("merge reads only the fp32 partitions, frozen params and buffers: never the Adam moments") {
  TempDir tmp;
  MergeOptions options;
  Result<MergeReport> r = MergeCheckpoint(Env::Default(), FixtureDir("zero3_ws4_fp32") + "/ckpt", tmp / "m.bin", options);
  REQUIRE(r.ok());
  // Every byte read was a source byte of the plan.
  uint64_t planned = 0;
  for (const zero::OutputTensor& t : r->plan.tensors)
    for (const zero::SourceSlice& s : t.slices) planned += s.count * torch::Info(s.dtype).itemsize;
  CHECK_EQ(r->bytes_read, planned);
  // fp32, stage 3, world size 4: the params' elements plus padding are
  // 4 x sum ceil(numel / 4); the plan reads each numel once.
  CHECK_EQ(r->tensor_bytes, r->bytes_read);
}

}  // namespace
}  // namespace zerofold::merge
