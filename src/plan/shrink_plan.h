// The shrink plan: which bytes of which input storage become each output
// storage, and where every tensor view points afterwards. Pure: no I/O.
//
// Per input storage, the byte extent of each view (ViewExtent; empty tensors
// take none) is computed. When the views leave no byte of the storage
// unreferenced, the storage is kept whole and its views keep their offsets,
// so an unbloated file keeps its size. Otherwise the extents are split into
// clusters: two views share a cluster only if their byte ranges overlap by at
// least one byte (ranges that merely touch are separate). Each cluster becomes
// one exactly sized output storage, so tied weights and views of views keep
// sharing storage at the same relative offsets, while the disjoint params of
// one flat buffer get storages of their own. A storage whose views are all
// empty becomes a zero-byte storage. A storage no tensor views (the pickle
// holds the storage object itself) is kept whole.
//
// With a SplitCost (plain shrink), a storage is split into its clusters only
// where that makes the output file smaller: when the records and pickle
// bytes the parts add cost at least what the unreferenced bytes take, the
// storage is kept whole and listed in kept_whole. Without one (conversions:
// casts, selections, re-sharding), every storage with an unreferenced byte
// is split.
#ifndef ZEROFOLD_PLAN_SHRINK_PLAN_H_
#define ZEROFOLD_PLAN_SHRINK_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/split_cost.h"
#include "torch/checkpoint.h"
#include "zerofold/result.h"

namespace zerofold::plan {

struct OutputStorage {
  uint32_t input_storage = 0;  // index into Checkpoint::storages
  uint64_t begin = 0;          // byte range [begin, end) of the input storage
  uint64_t end = 0;
  bool whole = false;          // the input storage is kept unchanged
  std::string key;             // output key (see AssignKeys)
  uint64_t nbytes() const { return end - begin; }
};

struct ViewPlacement {
  uint32_t output_storage = 0;  // index into ShrinkPlan::storages
  int64_t storage_offset = 0;   // new offset in elements of the tensor's dtype
};

struct ShrinkPlan {
  // In input record order (file offset), then by begin: the order a
  // forward-only reader meets their bytes, and string order of their keys.
  std::vector<OutputStorage> storages;
  std::vector<ViewPlacement> views;     // parallel to Checkpoint::tensors
  uint64_t bytes_before = 0;            // sum of input storage nbytes
  uint64_t bytes_after = 0;             // sum of output storage nbytes
  // Input storages that were split or trimmed (indexes into Checkpoint::storages).
  std::vector<uint32_t> changed_storages;
  // Input storages with unreferenced bytes kept whole because splitting
  // them would not make the file smaller, and those bytes.
  struct KeptWhole {
    uint32_t input_storage = 0;
    uint64_t unreferenced = 0;
  };
  std::vector<KeptWhole> kept_whole;
};

// Names output storages (in their final order): zip input keeps the input
// key for a storage that stays whole or becomes one storage, and names the
// parts of a split storage KEY.0, KEY.1, ... (zero-padded); legacy input, or
// keys whose string order would not match the storages' order, are numbered
// 0, 1, ... zero-padded to equal width.
void AssignKeys(const torch::Checkpoint& ckpt, std::vector<OutputStorage>& storages);

// Plans the shrink of every tensor of `ckpt`; `cost` nullptr splits every
// storage with unreferenced bytes. kCorrupt if a view's extent cannot be
// computed (the reader already rejects views outside storage).
Result<ShrinkPlan> PlanShrink(const torch::Checkpoint& ckpt, const SplitCost* cost = nullptr);

}  // namespace zerofold::plan

#endif  // ZEROFOLD_PLAN_SHRINK_PLAN_H_
