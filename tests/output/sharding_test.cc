#include "output/sharding.h"

#include <doctest/doctest.h>

#include <vector>

#include "support/checkpoint_builder.h"

namespace zerofold::output {
namespace {

using testing::BuildCheckpoint;
using torch::DType;

std::vector<ShardItem> Items(std::vector<uint64_t> nbytes) {
  std::vector<ShardItem> items;
  for (uint32_t i = 0; i < nbytes.size(); ++i) items.push_back({nbytes[i], i});
  return items;
}

using Shards = std::vector<std::vector<uint32_t>>;

TEST_CASE("shard names are transformers' names") {
  CHECK_EQ(ShardFileName(ShardFormat::kTorch, 2, 5), "pytorch_model-00002-of-00005.bin");
  CHECK_EQ(ShardFileName(ShardFormat::kSafetensors, 1, 3), "model-00001-of-00003.safetensors");
  CHECK_EQ(ShardFileName(ShardFormat::kSafetensors, 7, 123456), "model-00007-of-123456.safetensors");
  CHECK_EQ(SingleFileName(ShardFormat::kTorch), "pytorch_model.bin");
  CHECK_EQ(SingleFileName(ShardFormat::kSafetensors), "model.safetensors");
  CHECK_EQ(IndexFileName(ShardFormat::kTorch), "pytorch_model.bin.index.json");
  CHECK_EQ(IndexFileName(ShardFormat::kSafetensors), "model.safetensors.index.json");
}

TEST_CASE("shards fill greedily in output order") {
  // Limit 100: 40+50 fit (90), 20 would pass it, so it opens shard 2; 60
  // fits next to it (80); 30 does not (110).
  ShardPlan plan = PlanShards(Items({40, 50, 20, 60, 30}), 100);
  CHECK_EQ(plan.shards, Shards{{0, 1}, {2, 3}, {4}});
  CHECK_EQ(plan.bytes, std::vector<uint64_t>{90, 80, 30});
  CHECK_EQ(plan.shard_of, std::vector<uint32_t>{0, 0, 1, 1, 2});
  // Exactly at the limit still fits.
  CHECK_EQ(PlanShards(Items({60, 40, 1}), 100).shards, Shards{{0, 1}, {2}});
}

TEST_CASE("a tensor larger than the limit goes alone, where it stands") {
  ShardPlan plan = PlanShards(Items({10, 500, 10, 10}), 100);
  CHECK_EQ(plan.shards, Shards{{0}, {1}, {2, 3}});
  CHECK_EQ(plan.bytes, std::vector<uint64_t>{10, 500, 20});
  // Two big ones in a row: one shard each.
  CHECK_EQ(PlanShards(Items({500, 600}), 100).shards, Shards{{0}, {1}});
  // First item already over the limit.
  CHECK_EQ(PlanShards(Items({101, 0, 1}), 100).shards, Shards{{0}, {1, 2}});
}

TEST_CASE("tied names go into the shard of the name they are tied to") {
  // Items 0 and 3 share storage (group 0); item 3 comes last but lands with
  // item 0, and the group's bytes count where the group starts.
  std::vector<ShardItem> items = {{40, 0}, {50, 1}, {30, 2}, {0, 0}, {20, 3}};
  ShardPlan plan = PlanShards(items, 100);
  CHECK_EQ(plan.shards, Shards{{0, 1, 3}, {2, 4}});
  CHECK_EQ(plan.shard_of[3], 0u);
  // A tie that counts bytes (safetensors writes each name) moves the fill:
  // group 0 is 40 + 30 = 70 bytes, so item 1 (50) no longer fits beside it.
  std::vector<ShardItem> copies = {{40, 0}, {50, 1}, {30, 0}};
  plan = PlanShards(copies, 100);
  CHECK_EQ(plan.shards, Shards{{0, 2}, {1}});
  CHECK_EQ(plan.bytes, std::vector<uint64_t>{70, 50});
}

TEST_CASE("no items, no shards; zero-byte items share a shard") {
  CHECK(PlanShards({}, 100).shards.empty());
  CHECK_EQ(PlanShards(Items({0, 0, 0}), 100).shards, Shards{{0, 1, 2}});
  CHECK_EQ(PlanShards(Items({0, 0}), 0).shards, Shards{{0, 1}});
  CHECK_EQ(PlanShards(Items({1, 1}), 0).shards, Shards{{0}, {1}});
}

TEST_CASE("tie groups: views whose bytes overlap, transitively; touching views stay apart") {
  // Storage 0 (float32, 400 bytes): a [0,40), b = a (same view), c [36,80)
  // overlaps a by one element, d [80,120) only touches c, e is empty,
  // f [200,240) alone. Storage 1: g the whole storage, h its transpose.
  torch::Checkpoint ckpt = BuildCheckpoint(
      {400, 64}, {{"a", 0, DType::kFloat32, {10}, {1}, 0},
                  {"b", 0, DType::kFloat32, {10}, {1}, 0},
                  {"c", 0, DType::kFloat32, {11}, {1}, 9},
                  {"d", 0, DType::kFloat32, {10}, {1}, 20},
                  {"e", 0, DType::kFloat32, {0}, {1}, 5},
                  {"f", 0, DType::kFloat32, {2, 5}, {5, 1}, 50},
                  {"g", 1, DType::kFloat32, {4, 4}, {4, 1}, 0},
                  {"h", 1, DType::kFloat32, {4, 4}, {1, 4}, 0}});
  TieGroups groups = FindTieGroups(ckpt).value();
  CHECK_EQ(groups.group_of, std::vector<uint32_t>{0, 0, 0, 1, 2, 3, 4, 4});
  CHECK_EQ(groups.members, Shards{{0, 1, 2}, {3}, {4}, {5}, {6, 7}});
  CHECK_EQ(groups.group_bytes, std::vector<uint64_t>{80, 40, 0, 40, 64});
}

TEST_CASE("tie groups chain through a view that overlaps two others") {
  // x [0,16) and z [24,40) do not overlap, but y [12,28) overlaps both.
  torch::Checkpoint ckpt = BuildCheckpoint(
      {40}, {{"x", 0, DType::kFloat32, {4}, {1}, 0},
             {"z", 0, DType::kFloat32, {4}, {1}, 6},
             {"y", 0, DType::kFloat32, {4}, {1}, 3}});
  TieGroups groups = FindTieGroups(ckpt).value();
  CHECK_EQ(groups.group_of, std::vector<uint32_t>{0, 0, 0});
  CHECK_EQ(groups.group_bytes, std::vector<uint64_t>{40});
}

TEST_CASE("a view whose extent cannot be computed is an error naming it") {
  torch::Checkpoint ckpt = BuildCheckpoint({40}, {{"bad", 0, DType::kFloat32, {4}, {-1}, 0}});
  Result<TieGroups> r = FindTieGroups(ckpt);
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().code(), Code::kCorrupt);
  CHECK_EQ(r.status().record(), "bad");
}

}  // namespace
}  // namespace zerofold::output
