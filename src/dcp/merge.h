// A PyTorch Distributed Checkpoint folder planned for `zerofold merge`
// (merge/merge.h writes it): read `.metadata` (dcp/metadata.h) or the
// safetensors form, select keys and plan each tensor's chunks (dcp/plan.h),
// lay out in .metadata order with --only (gather/layout.h). Dtypes as
// saved unless a dtype is given. No tensor bytes are read.
#ifndef ZEROFOLD_DCP_MERGE_H_
#define ZEROFOLD_DCP_MERGE_H_

#include <optional>
#include <string>
#include <vector>

#include "dcp/folder.h"
#include "dcp/plan.h"
#include "gather/layout.h"
#include "gather/plan.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

struct MergeOptions {
  std::optional<std::string> select;      // the key subtree (SelectKeys); unset: model weights
  std::optional<torch::DType> dtype;      // floating tensors; unset: as saved
  std::vector<std::string> only;          // glob patterns on names (gather::LayOut)
  torch::ReadOptions read;
};

struct PlannedMerge {
  // The .distcp files, open: `gather`'s sources point into them, so they
  // must outlive every read of the plan.
  OpenFiles files;
  bool schema_2x = false;
  std::string version;
  Selection selection;
  gather::GatherPlan gather;
  gather::MergeLayout layout;
  std::vector<std::string> input_files;  // .metadata (when read), then the data files read
};

// Plans the merge of `folder`. Errors: those of LoadMetadata, SelectKeys
// (path: the folder), PlanDcp and LayOut.
Result<PlannedMerge> PlanDcpMerge(Env* env, const DcpFolder& folder, const MergeOptions& options);

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_MERGE_H_
