// `zerofold inspect CKPT_DIR` on a DeepSpeed checkpoint: what it is and what
// `merge` would make of it, from directories and pickles only (no tensor
// bytes are read).
#ifndef ZEROFOLD_ZERO_INSPECT_H_
#define ZEROFOLD_ZERO_INSPECT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::zero {

struct ZeroFileInfo {
  std::string path;
  std::string role;  // "model states", "optim states", "universal fp32"
  uint64_t bytes = 0;
};

struct ZeroInspection {
  std::string checkpoint, tag_folder, tag;
  std::string layout;     // "zero", "zero-0", "universal"
  int stage = 0;          // universal: the stage it came from
  uint32_t world_size = 0;
  std::string optimizer;  // DeepSpeedZeroOptimizer, DeepSpeedZeroOptimizer_Stage3, BF16_Optimizer, FP16_Optimizer, ...
  std::string ds_version;
  std::vector<std::string> master_dtypes;  // of the fp32 masters (bf16 for bf16 master weights)
  std::vector<std::string> module_dtypes;  // of the module's floating tensors
  size_t params = 0, frozen_params = 0, buffers = 0, ties = 0;
  uint64_t master_bytes = 0;           // fp32 master weights
  uint64_t optimizer_state_bytes = 0;  // everything else of the optimizer (Adam moments, ...)
  uint64_t module_bytes = 0;           // the module copy (16-bit weights, buffers, frozen fragments)
  std::vector<ZeroFileInfo> files;
  // What `merge` without flags would do: write merge_tensors tensors
  // (merge_bytes in a torch file, ties sharing), or refuse with `refusal`.
  bool mergeable = false;
  Status refusal;
  size_t merge_tensors = 0;
  uint64_t merge_bytes = 0;
  std::vector<std::string> linked_by_value;  // ZeRO-0 fp16 masters merge links by value
  std::vector<std::pair<std::string, std::string>> warnings;
};

// True if `dir` is a DeepSpeed checkpoint folder or tag folder: it holds
// `latest`, `latest_universal`, a *_states.pt file, or a folder holding one.
bool IsDeepSpeedFolder(Env* env, const std::string& dir);

// Describes the checkpoint in `ckpt_dir` (the tag `latest` names, see
// FindTagFolder). Errors of FindTagFolder and LoadZeroCheckpoint; a
// checkpoint merge refuses is described, with the refusal.
Result<ZeroInspection> InspectZeroCheckpoint(Env* env, const std::string& ckpt_dir, const torch::ReadOptions& read);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_INSPECT_H_
