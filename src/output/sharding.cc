#include "output/sharding.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string>

namespace zerofold::output {

namespace {

// transformers' file names (utils/__init__.py WEIGHTS_NAME, SAFE_WEIGHTS_NAME).
constexpr const char* kTorchStem = "pytorch_model";
constexpr const char* kTorchExtension = ".bin";
constexpr const char* kSafetensorsStem = "model";
constexpr const char* kSafetensorsExtension = ".safetensors";
constexpr const char* kIndexSuffix = ".index.json";
constexpr size_t kShardNumberWidth = 5;

std::string Padded(size_t v) {
  std::string s = std::to_string(v);
  return s.size() >= kShardNumberWidth ? s : std::string(kShardNumberWidth - s.size(), '0') + s;
}

}  // namespace

std::string SingleFileName(ShardFormat format) {
  return format == ShardFormat::kTorch ? std::string(kTorchStem) + kTorchExtension
                                       : std::string(kSafetensorsStem) + kSafetensorsExtension;
}

std::string IndexFileName(ShardFormat format) { return SingleFileName(format) + kIndexSuffix; }

std::string ShardFileName(ShardFormat format, size_t k, size_t n) {
  const bool torch = format == ShardFormat::kTorch;
  return std::string(torch ? kTorchStem : kSafetensorsStem) + "-" + Padded(k) + "-of-" + Padded(n) +
         (torch ? kTorchExtension : kSafetensorsExtension);
}

ShardPlan PlanShards(std::span<const ShardItem> items, uint64_t max_shard_bytes) {
  // Groups in order of first item, with their total bytes.
  std::vector<uint32_t> order;       // group ids by first appearance
  std::vector<uint64_t> bytes_of;    // indexed by position in `order`
  std::vector<uint32_t> position;    // group id -> position in `order`
  std::vector<bool> seen;
  for (const ShardItem& item : items) {
    if (item.group >= seen.size()) {
      seen.resize(item.group + 1, false);
      position.resize(item.group + 1, 0);
    }
    if (!seen[item.group]) {
      seen[item.group] = true;
      position[item.group] = static_cast<uint32_t>(order.size());
      order.push_back(item.group);
      bytes_of.push_back(0);
    }
    uint64_t& b = bytes_of[position[item.group]];
    b = item.nbytes > UINT64_MAX - b ? UINT64_MAX : b + item.nbytes;
  }

  ShardPlan plan;
  std::vector<uint32_t> shard_of_group(order.size());
  uint64_t current = 0;  // bytes in the last shard
  for (size_t g = 0; g < order.size(); ++g) {
    // transformers: `last_block_size + weight_size > max_shard_size and
    // len(sharded_state_dicts[-1]) > 0` starts a new shard.
    const bool passes = current > max_shard_bytes || bytes_of[g] > max_shard_bytes - current;
    if (plan.shards.empty() || passes) {
      plan.bytes.push_back(0);
      plan.shards.emplace_back();
      current = 0;
    }
    shard_of_group[g] = static_cast<uint32_t>(plan.shards.size() - 1);
    current = bytes_of[g] > UINT64_MAX - current ? UINT64_MAX : current + bytes_of[g];
    plan.bytes.back() = current;
  }
  plan.shard_of.resize(items.size());
  for (uint32_t i = 0; i < items.size(); ++i) {
    uint32_t shard = shard_of_group[position[items[i].group]];
    plan.shard_of[i] = shard;
    plan.shards[shard].push_back(i);
  }
  return plan;
}

Result<TieGroups> FindTieGroups(const torch::Checkpoint& ckpt) {
  struct Extent {
    uint32_t tensor;
    torch::ByteRange range;
  };
  const size_t n = ckpt.tensors.size();
  std::vector<std::vector<Extent>> by_storage(ckpt.storages.size());
  // Union-find over tensors; a cluster's root is its first tensor.
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](uint32_t t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
  };
  std::vector<torch::ByteRange> extent(n);
  for (uint32_t t = 0; t < n; ++t) {
    const torch::Tensor& tensor = ckpt.tensors[t];
    ZF_ASSIGN_OR_RETURN(extent[t], torch::ViewExtent(tensor));
    if (extent[t].begin != extent[t].end && tensor.storage < by_storage.size())
      by_storage[tensor.storage].push_back({t, extent[t]});
  }
  for (std::vector<Extent>& ext : by_storage) {
    std::sort(ext.begin(), ext.end(), [](const Extent& a, const Extent& b) {
      return a.range.begin != b.range.begin ? a.range.begin < b.range.begin : a.tensor < b.tensor;
    });
    uint64_t cluster_end = 0;  // end of the cluster the last extent joined
    for (size_t i = 0; i < ext.size(); ++i) {
      const bool overlaps = i > 0 && ext[i].range.begin < cluster_end;
      if (overlaps) {
        uint32_t a = find(ext[i - 1].tensor), b = find(ext[i].tensor);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
      cluster_end = overlaps ? std::max(cluster_end, ext[i].range.end) : ext[i].range.end;
    }
  }
  TieGroups groups;
  groups.group_of.resize(n);
  std::vector<uint32_t> id_of_root(n, UINT32_MAX);
  std::vector<torch::ByteRange> span;
  for (uint32_t t = 0; t < n; ++t) {
    uint32_t root = find(t);
    if (id_of_root[root] == UINT32_MAX) {
      id_of_root[root] = static_cast<uint32_t>(groups.members.size());
      groups.members.emplace_back();
      span.push_back(extent[t]);
    }
    uint32_t g = id_of_root[root];
    groups.group_of[t] = g;
    groups.members[g].push_back(t);
    span[g].begin = std::min(span[g].begin, extent[t].begin);
    span[g].end = std::max(span[g].end, extent[t].end);
  }
  for (const torch::ByteRange& r : span) groups.group_bytes.push_back(r.end - r.begin);
  return groups;
}

namespace {

// "model-00001-of-00003.safetensors": stem, "-", 5+ digits, "-of-", 5+ digits, extension.
bool IsShardName(const std::string& name, ShardFormat format) {
  const std::string single = SingleFileName(format);
  const size_t dot = single.find('.');
  const std::string stem = single.substr(0, dot), ext = single.substr(dot);
  if (name.size() <= stem.size() + ext.size() || name.rfind(stem + "-", 0) != 0 ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return false;
  const std::string middle = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - ext.size());
  const size_t of = middle.find("-of-");
  if (of == std::string::npos) return false;
  auto digits = [](const std::string& s) {
    return s.size() >= 5 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  return digits(middle.substr(0, of)) && digits(middle.substr(of + 4));
}

}  // namespace

bool IsSavedWeightsName(const std::string& name, ShardFormat format) {
  return name == SingleFileName(format) || name == IndexFileName(format) || IsShardName(name, format);
}

}  // namespace zerofold::output
