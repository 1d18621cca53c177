// rewrite::ShardTorchFile with verify, through MemEnv and FaultEnv: every
// shard is read back before its commit and compared with the input's
// tensors; a byte the disk corrupts is caught, naming the shard and the
// tensor, and nothing is left under OUT.
#include "rewrite/torch_shards.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem_env.h"
#include "support/fixtures.h"
#include "torch/read.h"
#include "zip/archive.h"

namespace zerofold::rewrite {
namespace {

const std::string kIn = "in/state_dict.pt";

ConvertOptions Shards(bool verify) {
  ConvertOptions o;
  o.max_shard_bytes = 300;  // state_dict.pt: 9 tensors, 404 bytes -> 2 shards
  o.verify = verify;
  return o;
}

TEST_CASE("verify of torch shards compares every tensor of every shard, and writes what a run without it writes") {
  io::MemEnv plain_env, verified_env;
  plain_env.SetFile(kIn, testing::Fixture("torch/state_dict.pt"));
  verified_env.SetFile(kIn, testing::Fixture("torch/state_dict.pt"));
  Result<ConvertReport> plain = ShardTorchFile(&plain_env, kIn, "out", Shards(false));
  Result<ConvertReport> verified = ShardTorchFile(&verified_env, kIn, "out", Shards(true));
  REQUIRE(plain.ok());
  REQUIRE(verified.ok());
  REQUIRE_EQ(verified->files.size(), 2u);
  CHECK_EQ(plain->verified_tensors, 0u);
  CHECK_EQ(verified->verified_tensors, 9u);
  CHECK_EQ(verified->verified_bytes, 404u);
  CHECK_EQ(plain_env.Files(), verified_env.Files());
  for (const std::string& f : plain_env.Files()) CHECK(plain_env.GetFile(f) == verified_env.GetFile(f));
}

TEST_CASE("verify of torch shards catches a byte the disk corrupts: nothing is committed") {
  // Where the first storage's bytes lie in the first shard, from a clean run.
  io::MemEnv clean;
  clean.SetFile(kIn, testing::Fixture("torch/state_dict.pt"));
  REQUIRE(ShardTorchFile(&clean, kIn, "out", Shards(false)).ok());
  const std::string first = "out/pytorch_model-00001-of-00002.bin";
  std::unique_ptr<RandomSource> shard = clean.OpenRandom(first).value();
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(*shard, {});
  REQUIRE(ckpt.ok());
  REQUIRE_FALSE(ckpt->storages.empty());
  const uint64_t data_offset = ckpt->storages[0].data_offset;
  REQUIRE(data_offset != zip::kUnlocated);

  for (bool verify : {false, true}) {
    CAPTURE(verify);
    io::MemEnv mem;
    mem.SetFile(kIn, testing::Fixture("torch/state_dict.pt"));
    io::FaultEnv fault(&mem);
    fault.FlipWrittenByte(data_offset);
    Result<ConvertReport> r = ShardTorchFile(&fault, kIn, "out", Shards(verify));
    if (!verify) {
      // Without verify the corruption goes unseen (what the test relies on).
      REQUIRE(r.ok());
      CHECK(mem.GetFile(first) != clean.GetFile(first));
      continue;
    }
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), Code::kCorrupt);
    CHECK_EQ(r.status().path(), first);
    CHECK_FALSE(r.status().record().empty());
    CHECK_EQ(mem.Files(), std::vector<std::string>{kIn});  // no shard, no index, no temp file
  }
}

}  // namespace
}  // namespace zerofold::rewrite
