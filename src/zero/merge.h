// A DeepSpeed ZeRO checkpoint planned for `zerofold merge` (merge/merge.h
// writes it): find the tag folder (zero/load.h), load every rank file's
// directory and pickle, link ZeRO-0's fp32 masters (LinkZero0), plan
// every tensor (zero/plan.h), lay the output out in the module's order
// (zero/gather_plan.h) and make the gather plan the writer executes.
// No tensor bytes are read. Memory: O(metadata).
#ifndef ZEROFOLD_ZERO_MERGE_H_
#define ZEROFOLD_ZERO_MERGE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gather/layout.h"
#include "gather/plan.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zero/load.h"
#include "zero/plan.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::zero {

struct MergeOptions {
  std::optional<std::string> tag;         // --tag; unset: the one `latest` names
  std::optional<torch::DType> dtype;      // every floating output tensor; unset: float32
  bool exclude_frozen = false;            // leave frozen params out
  std::vector<std::string> only;          // glob patterns on names (gather::LayOut)
  torch::ReadOptions read;
};

struct PlannedMerge {
  // The rank files, open: `gather`'s sources point into them, so they must
  // outlive every read of the plan.
  LoadedZero loaded;
  MergePlan plan;
  gather::GatherPlan gather;
  gather::MergeLayout layout;
  std::vector<std::string> input_files;  // model states, optim states (rank order), universal fp32.pt
  size_t params = 0, frozen_params = 0, buffers = 0;  // layout entries of each kind (ties not counted)
};

// Plans the merge of the DeepSpeed checkpoint in `ckpt_dir`. Errors carry
// the path of the file concerned and, from the planner, the numbers: those
// of FindTagFolder, LoadZeroCheckpoint, LinkZero0, PlanMerge (a missing
// rank: the tag folder), LayOutMerge and ToGatherPlan.
Result<PlannedMerge> PlanZeroMerge(Env* env, const std::string& ckpt_dir, const MergeOptions& options);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_MERGE_H_
