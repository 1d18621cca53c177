// Splitting output into Hugging Face shards, for torch and safetensors
// output alike. Pure: no I/O.
//
// Items (tensor names) are given in output order, each with the bytes it
// adds to a shard and its tie group: names whose bytes overlap in the input
// (tied weights, views of views) share storage, so a group always goes into
// one shard, the shard of its first name (huggingface_hub's
// split_torch_state_dict_into_shards puts every name of a storage with the
// first), and no shard carries bytes of another shard's storage. Shards fill
// greedily, as transformers' shard_checkpoint does: a group closes the
// current shard when adding it would pass the limit and the shard is not
// empty, so a group larger than the limit gets a shard of its own.
#ifndef ZEROFOLD_OUTPUT_SHARDING_H_
#define ZEROFOLD_OUTPUT_SHARDING_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/result.h"

namespace zerofold::output {

// transformers' default max_shard_size, "5GB".
constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

enum class ShardFormat : uint8_t { kTorch, kSafetensors };

// "pytorch_model.bin", "model.safetensors": the name of an unsharded file.
std::string SingleFileName(ShardFormat format);
// "pytorch_model.bin.index.json", "model.safetensors.index.json".
std::string IndexFileName(ShardFormat format);
// "pytorch_model-00002-of-00005.bin", "model-00002-of-00005.safetensors":
// k counts from 1; both numbers have at least five digits, as transformers
// writes them (`f"-{idx+1:05d}-of-{n:05d}"`).
std::string ShardFileName(ShardFormat format, size_t k, size_t n);

// True for the names a save of `format` writes: SingleFileName,
// IndexFileName, and ShardFileName's pattern (5 or more digits each).
bool IsSavedWeightsName(const std::string& name, ShardFormat format);

struct ShardItem {
  uint64_t nbytes = 0;  // bytes the item adds to its shard
  uint32_t group = 0;   // items with the same group go into one shard
};

struct ShardPlan {
  std::vector<std::vector<uint32_t>> shards;  // item indexes per shard, ascending
  std::vector<uint64_t> bytes;                // per shard: the sum of its items' nbytes
  std::vector<uint32_t> shard_of;             // per item: its shard
};

// Plans shards as described above; groups are placed in the order of their
// first item. No items give no shards.
ShardPlan PlanShards(std::span<const ShardItem> items, uint64_t max_shard_bytes);

struct TieGroups {
  std::vector<uint32_t> group_of;    // per tensor of the checkpoint
  std::vector<uint64_t> group_bytes; // per group: the bytes its views span (union extent)
  // Per group: the tensors in it, in checkpoint order.
  std::vector<std::vector<uint32_t>> members;
};

// Groups the tensors of `ckpt` whose byte extents in one storage overlap by
// at least one byte, transitively; extents that merely touch stay apart.
// Empty tensors have no extent and each form a group of their own. Groups
// are numbered in order of their first tensor. kCorrupt (record: the tensor)
// if an extent cannot be computed.
Result<TieGroups> FindTieGroups(const torch::Checkpoint& ckpt);

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_SHARDING_H_
