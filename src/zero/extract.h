// Reading the merge planner's description (description.h) out of the
// checkpoint models of DeepSpeed's files: the keys README.md lists, found in
// the pickle graph by name, and the tensors they hold, by their views. Pure:
// no bytes are read; DeepSpeed's classes stay symbolic.
#ifndef ZEROFOLD_ZERO_EXTRACT_H_
#define ZEROFOLD_ZERO_EXTRACT_H_

#include <cstdint>
#include <string_view>

#include "torch/checkpoint.h"
#include "zero/description.h"
#include "zerofold/result.h"

namespace zerofold::zero {

// Describes a *_model_states.pt. `file` becomes ModelStates::file and the
// path of errors. `module` entries that are not tensors (extra state) are
// skipped. kCorrupt (record: the key path, e.g. "param_shapes.1") when the
// root is no dict with `module`, `buffer_names` and `param_shapes`, or a key
// holds a value of the wrong kind.
Result<ModelStates> ExtractModelStates(const torch::Checkpoint& ckpt, std::string_view file);

// Describes a [bf16_]zero_pp_rank_R_mp_rank_00_optim_states.pt of rank
// `rank`. `zero_stage` may be an int, ZeroStageEnum(n), or the member
// (getattr(ZeroStageEnum, 'gradients'), as Python >= 3.11 pickles it).
// kCorrupt as above when `optimizer_state_dict` lacks `partition_count` or
// the fp32 groups, or a value has the wrong kind; kUnsupported for the old
// ZeRO-1 layout (local_sub_partitions_of_fp32_groups).
Result<OptimStates> ExtractOptimStates(const torch::Checkpoint& ckpt, std::string_view file, uint32_t rank);

// Describes a universal checkpoint's zero/<name>/fp32.pt (ds_to_universal.py):
// a dict whose `param` is the tensor (ZeRO-1/2; `cat_dim`, `vocab_tensor`,
// `sub_param_shape` describe TP slicing), or the tensor itself (ZeRO-3).
// kCorrupt when it is neither.
Result<UniversalParam> ExtractUniversalParam(const torch::Checkpoint& ckpt, std::string_view file, std::string name,
                                             uint32_t index);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_EXTRACT_H_
