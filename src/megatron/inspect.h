// What `zerofold inspect` shows of a Megatron-Core torch_dist checkpoint:
// its layout and iteration, which Megatron-Core wrote it (from the form of
// .metadata), common.pt's plain values (iteration, checkpoint_version, the
// training arguments that shape the model, content_metadata), every key
// as the DCP listing shows it (dcp/listing.h), the stacked and N-D
// flattened keys, the optimizer's form, and what `zerofold merge` would
// write (weights; with --unstack; the optimizer with --select optimizer)
// or why it would refuse. Reads .metadata, common.pt and each planned
// chunk's archive directory (never tensor bytes).
#ifndef ZEROFOLD_MEGATRON_INSPECT_H_
#define ZEROFOLD_MEGATRON_INSPECT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dcp/listing.h"
#include "json/writer.h"
#include "megatron/common.h"
#include "megatron/folder.h"
#include "megatron/merge.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

// A key --unstack splits: `layers` along axis 0 (0: not layer-stacked),
// then `experts` along the next axis (0: not expert-stacked).
struct StackedKey {
  std::string key;
  int64_t layers = 0;
  int64_t experts = 0;
};

struct NdKey {
  std::string key;
  std::vector<int64_t> stored;    // [F..., P]
  std::vector<int64_t> original;  // nd_reformulated_orig_global_shape
};

// What one merge would do: its tensors and bytes, or its refusal.
struct MergeOutlook {
  bool mergeable = false;
  size_t tensors = 0;
  uint64_t bytes = 0;
  Status refusal;
};

struct Inspection {
  Folder folder;
  dcp::Listing listing;
  CommonState common;
  std::string metadata_root;   // the root's class, module.name
  bool has_mcore_data = false;
  size_t local_plans = 0;
  std::string local_plan_class;
  std::string core_version;    // CoreVersionHint
  OptimizerForm optimizer = OptimizerForm::kNone;
  size_t optimizer_tensors = 0;
  uint64_t optimizer_bytes = 0;
  std::vector<StackedKey> stacked;
  std::vector<NdKey> nd;
  MergeOutlook weights;          // merge (no flags)
  MergeOutlook unstacked;        // merge --unstack
  MergeOutlook optimizer_merge;  // merge --select optimizer (form kNone: not mergeable, no refusal)
};

// The inspection of `path` when it is a Megatron checkpoint (FindFolder),
// nullopt when it is none. Errors of FindFolder, dcp::LoadMetadata and
// ReadCommon; a merge's refusal is part of the inspection.
Result<std::optional<Inspection>> InspectPath(Env* env, const std::string& path, const torch::ReadOptions& read);

// {"path":..., "format":"megatron", "megatron":{...}, then the DCP
// listing's members (dcp::WriteListingFields)}: an element of inspect's
// "files". README "inspect --json" lists the members.
void WriteInspectionJson(json::Writer& w, const Inspection& i);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_INSPECT_H_
