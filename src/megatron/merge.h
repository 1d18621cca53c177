// A Megatron-Core torch_dist checkpoint planned for `zerofold merge`
// (merge/merge.h writes it) through the DCP planner: `.metadata` read by
// dcp::ReadMetadata (which accepts Megatron's additions), keys selected
// by dcp::SelectKeys (by default every tensor key but `optimizer.*`;
// ShardedObjects, `_extra_state` and RNG state are bytes entries, never
// output), chunks planned by dcp::PlanDcp, N-D flattened optimizer
// tensors put back into their original shape (megatron/nd_flat.h), with
// --unstack the stacked keys split (megatron/unstack.h), laid out in
// .metadata order with --only (gather/layout.h). No tensor bytes are read.
#ifndef ZEROFOLD_MEGATRON_MERGE_H_
#define ZEROFOLD_MEGATRON_MERGE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dcp/metadata.h"
#include "dcp/plan.h"
#include "gather/layout.h"
#include "gather/plan.h"
#include "megatron/folder.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

// The prefix of the distributed optimizer's dp_reshardable buffers.
inline constexpr const char* kDpReshardablePrefix = "optimizer.distributed.";

// How the optimizer state is stored (from the keys and mcore_data):
enum class OptimizerForm : uint8_t {
  kNone,          // no `optimizer.` tensor keys
  kModelSpace,    // optimizer.state.<state>.<param key> shaped as the param (a
                  // non-distributed optimizer, or the distributed one's fully_reshardable)
  kNdFlattened,   // the same keys N-D flattened (fully_sharded_model_space, core <= 0.15)
  kDpReshardable, // per-bucket flat buffers optimizer.distributed.*: not mergeable
};

// "none", "model-space", "nd-flattened", "dp_reshardable".
const char* OptimizerFormName(OptimizerForm form);

OptimizerForm FindOptimizerForm(const dcp::Metadata& md);

// Which Megatron-Core wrote `.metadata`, from its pickle's form:
// "0.15" (MCoreMetadata root), "<= 0.14" (mcore_data on torch's Metadata),
// ">= 0.16" (all_local_plans of torch SavePlans), "" when none says.
std::string CoreVersionHint(const dcp::Metadata& md);

struct MergeOptions {
  std::optional<std::string> select;   // dcp::SelectKeys; unset: the weights
  std::optional<torch::DType> dtype;   // floating tensors; unset: as saved
  std::vector<std::string> only;       // glob patterns on output names
  bool unstack = false;                // split stacked layers and experts
  torch::ReadOptions read;
};

struct PlannedMerge {
  // The .distcp files, open: `gather`'s sources point into them.
  dcp::OpenFiles files;
  std::string core_version;   // CoreVersionHint
  OptimizerForm optimizer = OptimizerForm::kNone;
  dcp::Selection selection;
  gather::GatherPlan gather;
  gather::MergeLayout layout;
  std::vector<std::string> input_files;  // .metadata, then the data files read
  size_t nd_restored = 0;     // N-D flattened tensors put back into shape
  size_t unstacked_keys = 0;  // keys --unstack split
};

// Plans the merge of `folder`. Errors: those of dcp::LoadMetadata,
// dcp::SelectKeys (path: the torch_dist folder), dcp::PlanDcp, Unflatten
// (record: the key; path: .metadata), Unstack and gather::LayOut; and
// kUnsupported (record: the first such key) when the selection holds the
// distributed optimizer's dp_reshardable buffers.
Result<PlannedMerge> PlanMegatronMerge(Env* env, const Folder& folder, const MergeOptions& options);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_MERGE_H_
