#include "plan/shrink_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace zerofold::plan {

namespace {

struct Extent {
  uint32_t tensor;
  torch::ByteRange range;
};

// A cluster of overlapping extents of one input storage, before keys are known.
struct Cluster {
  uint64_t begin;
  uint64_t end;
  uint64_t alignment;  // lcm of the item sizes of its views
};

uint64_t Lcm(uint64_t a, uint64_t b) { return a / std::gcd(a, b) * b; }

// i in decimal, zero-padded to the width of `last`.
std::string Padded(size_t i, size_t last) {
  std::string s = std::to_string(i);
  size_t width = std::to_string(last).size();
  return std::string(width - s.size(), '0') + s;
}

}  // namespace

void AssignKeys(const torch::Checkpoint& ckpt, std::vector<OutputStorage>& storages) {
  // Zip input: a storage that stays one storage keeps its key; one split in
  // k keeps it as a prefix, "KEY.0" .. "KEY.(k-1)" zero-padded, which sorts
  // right after KEY and before any other key, so string order of the output
  // keys is the input's record order when the input's was (torch writes
  // records in string order of keys).
  bool ok = ckpt.format == torch::Format::kTorchZip;
  if (ok) {
    std::vector<size_t> count(ckpt.storages.size(), 0);
    for (const OutputStorage& o : storages) count[o.input_storage]++;
    std::vector<size_t> seen(ckpt.storages.size(), 0);
    std::vector<std::string> keys;
    for (OutputStorage& o : storages) {
      const std::string& key = ckpt.storages[o.input_storage].key;
      size_t k = count[o.input_storage];
      o.key = k == 1 ? key : key + "." + Padded(seen[o.input_storage]++, k - 1);
      keys.push_back(o.key);
    }
    std::sort(keys.begin(), keys.end());
    ok = std::adjacent_find(keys.begin(), keys.end()) == keys.end();
    for (size_t i = 0; ok && i + 1 < storages.size(); ++i) ok = storages[i].key < storages[i + 1].key;
  }
  if (ok) return;
  // Legacy input (keys are memory addresses), or keys whose split names
  // collide or whose order differs from the records': number the storages
  // in order, zero-padded so string order is that order.
  for (size_t i = 0; i < storages.size(); ++i) storages[i].key = Padded(i, storages.empty() ? 0 : storages.size() - 1);
}

Result<ShrinkPlan> PlanShrink(const torch::Checkpoint& ckpt, const SplitCost* cost) {
  const size_t n_storages = ckpt.storages.size();
  std::vector<std::vector<Extent>> extents(n_storages);
  std::vector<std::vector<uint32_t>> empty_views(n_storages);
  std::vector<bool> referenced(n_storages, false);

  for (uint32_t t = 0; t < ckpt.tensors.size(); ++t) {
    const torch::Tensor& tensor = ckpt.tensors[t];
    Result<torch::ByteRange> range = torch::ViewExtent(tensor);
    if (!range.ok()) return Status(range.status()).WithRecord(tensor.name);
    referenced[tensor.storage] = true;
    if (range->begin == range->end) {
      empty_views[tensor.storage].push_back(t);
    } else {
      extents[tensor.storage].push_back({t, *range});
    }
  }

  ShrinkPlan plan;
  plan.views.resize(ckpt.tensors.size());
  // Per input storage, the output storages it becomes (before key assignment,
  // indexes into plan.storages) and, per tensor, which of them it lands in.
  std::vector<uint32_t> tensor_output(ckpt.tensors.size(), UINT32_MAX);

  for (uint32_t s = 0; s < n_storages; ++s) {
    const torch::Storage& storage = ckpt.storages[s];
    plan.bytes_before += storage.nbytes;
    if (!referenced[s]) {
      // A storage the pickle names but no tensor views (a bare storage
      // object): nothing says which of its bytes matter, so keep it whole.
      plan.storages.push_back({s, 0, storage.nbytes, true, ""});
      continue;
    }
    std::vector<Extent>& ext = extents[s];
    std::sort(ext.begin(), ext.end(), [](const Extent& a, const Extent& b) {
      return a.range.begin != b.range.begin ? a.range.begin < b.range.begin : a.tensor < b.tensor;
    });

    // Referenced bytes: the union of the extents.
    uint64_t covered = 0, cur_end = 0;
    for (const Extent& e : ext) {
      uint64_t b = std::max(e.range.begin, cur_end);
      if (e.range.end > b) covered += e.range.end - b;
      cur_end = std::max(cur_end, e.range.end);
    }

    // No unreferenced byte: kept whole, also when it has none (a zero-byte
    // storage under empty views is already exactly sized). Packed sub-byte
    // dtypes cannot start a storage mid-byte: kept whole too.
    bool packed = false;
    for (const Extent& e : ext) packed |= torch::ElementBits(ckpt.tensors[e.tensor].dtype) < 8;
    if (covered == storage.nbytes || packed) {
      uint32_t out = static_cast<uint32_t>(plan.storages.size());
      plan.storages.push_back({s, 0, storage.nbytes, true, ""});
      for (const Extent& e : ext) tensor_output[e.tensor] = out;
      for (uint32_t t : empty_views[s]) tensor_output[t] = out;
      continue;
    }
    // Split into clusters of extents that overlap by at least one byte.
    std::vector<Cluster> clusters;
    std::vector<uint32_t> cluster_of(ext.size());
    for (size_t i = 0; i < ext.size(); ++i) {
      const Extent& e = ext[i];
      uint64_t itemsize = torch::Info(ckpt.tensors[e.tensor].dtype).itemsize;
      if (clusters.empty() || e.range.begin >= clusters.back().end) {
        clusters.push_back({e.range.begin, e.range.end, itemsize});
      } else {
        clusters.back().end = std::max(clusters.back().end, e.range.end);
        clusters.back().alignment = Lcm(clusters.back().alignment, itemsize);
      }
      cluster_of[i] = static_cast<uint32_t>(clusters.size() - 1);
    }
    // Each cluster a part, starting on a boundary every view's dtype
    // divides, so new element offsets are whole numbers (views of one
    // untyped storage may differ). Empty views have no extent; they point
    // at offset 0 of the first part, or of a zero-byte part of their own.
    std::vector<Part> parts;
    for (const Cluster& c : clusters) parts.push_back({c.begin - c.begin % c.alignment, c.end});
    if (parts.empty()) parts.push_back({0, 0});
    std::vector<PartView> part_views;
    for (size_t i = 0; i < ext.size(); ++i) {
      const torch::Tensor& t = ckpt.tensors[ext[i].tensor];
      const uint64_t itemsize = torch::Info(t.dtype).itemsize;
      const uint64_t byte_offset = static_cast<uint64_t>(t.storage_offset) * itemsize;
      part_views.push_back({ext[i].tensor, cluster_of[i],
                            static_cast<int64_t>((byte_offset - parts[cluster_of[i]].begin) / itemsize)});
    }
    for (uint32_t t : empty_views[s]) part_views.push_back({t, 0, 0});

    if (cost != nullptr && cost->Delta(s, parts, part_views) >= 0) {
      uint32_t out = static_cast<uint32_t>(plan.storages.size());
      plan.storages.push_back({s, 0, storage.nbytes, true, ""});
      for (const PartView& v : part_views) tensor_output[v.tensor] = out;
      plan.kept_whole.push_back({s, storage.nbytes - covered});
      continue;
    }
    plan.changed_storages.push_back(s);
    const uint32_t first_out = static_cast<uint32_t>(plan.storages.size());
    for (const Part& p : parts) plan.storages.push_back({s, p.begin, p.end, false, ""});
    for (const PartView& v : part_views) tensor_output[v.tensor] = first_out + v.part;
  }

  // New offsets.
  for (uint32_t t = 0; t < ckpt.tensors.size(); ++t) {
    const torch::Tensor& tensor = ckpt.tensors[t];
    const OutputStorage& out = plan.storages[tensor_output[t]];
    uint64_t itemsize = torch::Info(tensor.dtype).itemsize;
    int64_t offset = 0;
    if (out.whole) {
      offset = tensor.storage_offset;
    } else if (tensor.numel() != 0) {
      uint64_t byte_offset = static_cast<uint64_t>(tensor.storage_offset) * itemsize;
      offset = static_cast<int64_t>((byte_offset - out.begin) / itemsize);
    }
    plan.views[t] = {tensor_output[t], offset};
  }

  // Order: input records in file order, then by begin, so a forward-only
  // reader can produce every output storage as its input streams by.
  std::vector<uint32_t> order(plan.storages.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const OutputStorage& x = plan.storages[a];
    const OutputStorage& y = plan.storages[b];
    uint64_t xo = ckpt.storages[x.input_storage].data_offset, yo = ckpt.storages[y.input_storage].data_offset;
    if (xo != yo) return xo < yo;
    if (x.input_storage != y.input_storage) return x.input_storage < y.input_storage;
    return x.begin < y.begin;
  });
  std::vector<uint32_t> new_index(plan.storages.size());
  std::vector<OutputStorage> sorted;
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(plan.storages[order[i]]);
  }
  for (ViewPlacement& v : plan.views) v.output_storage = new_index[v.output_storage];
  plan.storages = std::move(sorted);
  AssignKeys(ckpt, plan.storages);
  for (const OutputStorage& o : plan.storages) plan.bytes_after += o.nbytes();
  return plan;
}

}  // namespace zerofold::plan
