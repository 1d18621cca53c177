// What a DeepSpeed checkpoint needs beyond its rank files (ops/merge_load.h):
// a universal checkpoint's zero/<name>/fp32.pt files, and the links of a
// ZeRO-0 fp16 checkpoint's unnamed fp32 masters to their params (zero/link.h).
#ifndef ZEROFOLD_OPS_ZERO_SOURCES_H_
#define ZEROFOLD_OPS_ZERO_SOURCES_H_

#include <string>
#include <vector>

#include "ops/merge_load.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ops {

// The folder of a universal tag folder that holds zero/<param name>/.
inline constexpr const char* kUniversalZeroFolder = "zero";

// True if `tag_folder` holds a universal checkpoint's zero/ folder.
bool IsUniversalTagFolder(Env* env, const std::string& tag_folder);

// Reads every zero/<name>/fp32.pt (directory and pickle only) into
// out->param_files and out->description.universal_params, sorted by name.
// kNotFound naming the folder when one lacks fp32.pt; errors of
// ReadCheckpoint and ExtractUniversalParam with the file's path.
Status LoadUniversalParams(Env* env, const torch::ReadOptions& read, LoadedZero* out);

// NVMe-offloaded stage-3 partitions (DeepSpeed #6963, #7613): a rank whose
// fp32_flat_groups are empty tensors has each sub-group's data in
// <tag>/offloaded_tensors/rank<NN>/<a>_<b>.tensor.swp (a, b: the module-order
// indexes of the sub-group's first and last params, their zero.Init ds_ids).
// Opens those files into out->param_files and points the rank's groups at
// them. kNotFound naming the folder or file when absent; kCorrupt when a
// file is shorter than its partition. Other checkpoints: untouched.
Status LoadOffloadedPartitions(Env* env, LoadedZero* out);

// ZeRO-0 fp16 (no optim-states files, FP16_Optimizer or
// FP16_UnfusedOptimizer state in the model states): fills
// out->description.zero0_masters. by_value: candidates are checked against
// the saved 16-bit values (reads tensor bytes), every link must be unique.
// Otherwise links by structure only and returns the masters left open.
// Other checkpoints: nothing to do, an empty list.
Result<std::vector<std::string>> LinkZero0(LoadedZero* out, bool by_value);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_ZERO_SOURCES_H_
