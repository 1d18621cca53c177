// Faults injected through the Env seam while merging: every failure is an
// error naming the file, and leaves no output file behind.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gather/assemble.h"
#include "gather/verify.h"
#include "io/fault_env.h"
#include "merge/merge.h"
#include "zero/gather_plan.h"
#include "zero/load.h"

namespace zerofold::merge {
namespace {

namespace fs = std::filesystem;

std::string Checkpoint(const char* name) {
  return std::string(ZF_SOURCE_ROOT) + "/fixtures/deepspeed/" + name + "/ckpt";
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "zf_merge_fault_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// A sharded merge of ZeRO-3 (6 shards and an index at 40 kB).
MergeOptions Sharded() {
  MergeOptions o;
  o.max_shard_bytes = 40000;
  o.buffer_bytes = 4096;
  return o;
}

TEST_CASE("a full disk at any point: kIO naming the shard, and no file left") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  uint64_t total = 0;
  {
    Result<MergeReport> r = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, Sharded());
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    REQUIRE_EQ(r->files.size(), 6u);
    for (const MergeOutputFile& f : r->files) total += f.bytes;
    fs::remove_all(out);
  }
  for (uint64_t space : {uint64_t{1}, uint64_t{40000}, total / 2, total - 1}) {  // 0 would turn the fault off
    CAPTURE(space);
    env.Reset();
    env.SetSpace(space);
    Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, Sharded()).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_NE(s.path().find(out + "/pytorch_model-0000"), std::string::npos);
    CHECK_EQ(Listing(out), std::vector<std::string>{});
  }
}

TEST_CASE("a failed commit removes the shards committed before it") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  for (uint64_t n : {1, 3, 7}) {  // the first shard, a middle one, the index
    CAPTURE(n);
    env.Reset();
    env.FailCommit(n);
    Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, Sharded()).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_EQ(s.path(), n == 7 ? out + "/pytorch_model.bin.index.json"
                              : out + "/pytorch_model-0000" + std::to_string(n) + "-of-00006.bin");
    CHECK_EQ(Listing(out), std::vector<std::string>{});
  }
}

TEST_CASE("too little free disk for the planned shards: kIO before any byte is written, OUT not created") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/new/out";
  uint64_t total = 0;
  {
    MergeOptions dry = Sharded();
    dry.dry_run = true;
    Result<MergeReport> r = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, dry);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    for (const MergeOutputFile& f : r->files) total += f.bytes;
  }
  env.SetFreeBytes(total);  // the shards would fit, the index not
  Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, Sharded()).status();
  CHECK_EQ(s.code(), Code::kIO);
  CHECK_EQ(s.path(), out);
  CHECK_NE(s.message().find("needs "), std::string::npos);
  CHECK_EQ(env.bytes_appended(), 0u);
  CHECK_FALSE(fs::exists(tmp.path + "/new"));
  env.SetFreeBytes(io::FaultEnv::kNever);
  REQUIRE(MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, Sharded()).ok());
}

TEST_CASE("a failed commit also removes the folders the merge created") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  env.FailCommit(3);
  Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), tmp.path + "/a/b/out", Sharded()).status();
  CHECK_EQ(s.code(), Code::kIO);
  CHECK_EQ(Listing(tmp.path), std::vector<std::string>{});
}

TEST_CASE("a failed read of a rank file: kIO naming it, no output") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/m.bin";
  env.FailRead(0);
  REQUIRE(MergeCheckpoint(&env, Checkpoint("zero2_ws3_bf16"), out, MergeOptions{}).ok());
  const uint64_t reads = env.reads();
  fs::remove(out);
  for (uint64_t n : {uint64_t{1}, reads / 2, reads}) {
    CAPTURE(n);
    env.Reset();
    env.FailRead(n);
    Status s = MergeCheckpoint(&env, Checkpoint("zero2_ws3_bf16"), out, MergeOptions{}).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_EQ(s.path().rfind(Checkpoint("zero2_ws3_bf16") + "/", 0), 0u);  // `latest` or a rank file
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("--verify reads the shards before any commit: a failed read of one leaves the earlier save as it was") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  MergeOptions options = Sharded();
  REQUIRE(MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, options).ok());
  std::vector<std::string> before = Listing(out);
  std::sort(before.begin(), before.end());
  REQUIRE_EQ(before.size(), 7u);  // 6 shards and the index
  // The reads of the rank files, counted without verify; those after them
  // read the shards back.
  env.Reset();
  options.force = true;
  REQUIRE(MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, options).ok());
  const uint64_t merge_reads = env.reads();
  options.verify = true;
  env.Reset();
  REQUIRE(MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, options).ok());
  const uint64_t all_reads = env.reads();
  REQUIRE_GT(all_reads, merge_reads);
  // Mark the earlier save so that a replacement would show.
  const std::string index = out + "/pytorch_model.bin.index.json";
  { std::ofstream(index, std::ios::app) << " "; }
  const uintmax_t index_size = fs::file_size(index);
  for (uint64_t n = merge_reads + 1; n <= all_reads; n += (all_reads - merge_reads) / 7 + 1) {
    CAPTURE(n);
    env.Reset();
    env.FailRead(n);
    Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws3_fp16"), out, options).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_EQ(env.commits(), 0u);
    std::vector<std::string> after = Listing(out);
    std::sort(after.begin(), after.end());
    CHECK_EQ(after, before);  // no temp file left, nothing removed
    CHECK_EQ(fs::file_size(index), index_size);
  }
}

TEST_CASE("rank files that shrank after their directory was read: kCorrupt naming the file and record") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/m.bin";
  // The directories and pickles sit at the ends of the files; the storage
  // records of the fp32 partitions start within the first 100 kB.
  MergeOptions options;
  Result<zero::LoadedZero> loaded = zero::LoadZeroCheckpoint(&env, Checkpoint("zero3_ws4_fp32") + "/global_step2", options.read);
  REQUIRE(loaded.ok());
  uint64_t first_data = UINT64_MAX;
  for (const zero::ZeroFile& f : loaded->optim_files)
    for (const auto& [key, where] : f.storages) first_data = std::min(first_data, where.data_offset);
  env.TruncateReadsAt(first_data + 100);
  // ReadCheckpoint reads the end of each file: the truncation hits it first.
  Status s = MergeCheckpoint(&env, Checkpoint("zero3_ws4_fp32"), out, options).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_NE(s.path().find("zero_pp_rank_0_mp_rank_00_"), std::string::npos);
  CHECK_FALSE(fs::exists(out));

  // Shrinking only after loading: the assembler meets it.
  env.Reset();
  Result<zero::MergePlan> plan = zero::PlanMerge(loaded->description);
  REQUIRE(plan.ok());
  Result<gather::GatherPlan> gather = zero::ToGatherPlan(*plan, *loaded);
  REQUIRE(gather.ok());
  gather::TensorAssembler assembler(gather->sources, 4096);
  const gather::GatherTensor* wte = nullptr;
  const zero::OutputTensor* wte_slices = nullptr;
  for (size_t i = 0; i < plan->tensors.size(); ++i)
    if (plan->tensors[i].name == "transformer.wte.weight") wte = &gather->tensors[i], wte_slices = &plan->tensors[i];
  REQUIRE(wte != nullptr);
  // loaded's sources were opened through env: truncate them now.
  env.TruncateReadsAt(0);
  s = assembler.Assemble(*wte, [](std::span<const std::byte>) { return Status::OK(); });
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), loaded->optim_files[0].path);
  CHECK_EQ(s.record(), loaded->optim_files[0].storages.at(wte_slices->slices[0].storage).record);
}

TEST_CASE("--verify finds a changed byte in the output, naming the file and tensor") {
  TempDir tmp;
  const std::string out = tmp.path + "/m.bin";
  MergeOptions options;
  Result<MergeReport> r = MergeCheckpoint(Env::Default(), Checkpoint("zero1_ws2_fp16"), out, options);
  REQUIRE(r.ok());
  Result<zero::LoadedZero> loaded =
      zero::LoadZeroCheckpoint(Env::Default(), Checkpoint("zero1_ws2_fp16") + "/global_step2", options.read);
  REQUIRE(loaded.ok());
  Result<gather::GatherPlan> gather = zero::ToGatherPlan(r->plan, *loaded);
  REQUIRE(gather.ok());
  gather::TensorAssembler assembler(gather->sources, 4096);
  auto verify = [&]() -> Result<gather::VerifyResult> {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> written, Env::Default()->OpenRandom(out));
    const RandomSource* readers[] = {written.get()};
    return gather::VerifyMergeOutput(readers, *gather, r->layout, r->files, MergeFormat::kTorch, assembler, options.read,
                             4096, nullptr);
  };
  Result<gather::VerifyResult> ok = verify();
  REQUIRE_MESSAGE(ok.ok(), ok.status().ToString());
  CHECK_EQ(ok->tensors, 31u);
  CHECK_EQ(ok->bytes, r->tensor_bytes);

  // Flip one byte in the middle of the output: inside some tensor's data.
  {
    std::fstream f(out, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(r->files[0].bytes / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(r->files[0].bytes / 2));
    c = static_cast<char>(c ^ 0x40);
    f.write(&c, 1);
  }
  Status s = verify().status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), out);
  CHECK_FALSE(s.record().empty());
  CHECK_EQ(s.message().rfind("verify: xxh3-128 of the written bytes ", 0), 0u);
}

}  // namespace
}  // namespace zerofold::merge
