// The merge plan: which element ranges of which rank files' storages make up
// each tensor of the full model. A pure function of a ZeroCheckpoint
// description; nothing is read. The rules and the DeepSpeed facts behind them
// are in README.md in this folder.
//
// A writer executes the plan: for each OutputTensor, it reads each slice's
// `count` elements of `dtype` from the storage record `storage` of the named
// file, starting at element `offset`, converts them to the tensor's dtype, and
// appends them. The concatenation is the tensor in row-major order.
#ifndef ZEROFOLD_ZERO_PLAN_H_
#define ZEROFOLD_ZERO_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torch/dtype.h"
#include "zero/description.h"
#include "zerofold/result.h"

namespace zerofold::zero {

enum class SourceKind : uint8_t {
  kOptimStates,  // `file` indexes ZeroCheckpoint::optim_states (the rank)
  kModelStates,  // `file` indexes ZeroCheckpoint::model_states
  kParamFile,    // `file` indexes ZeroCheckpoint::param_files (universal zero/<name>/fp32.pt)
};

struct SourceSlice {
  SourceKind source = SourceKind::kOptimStates;
  uint32_t file = 0;
  std::string storage;   // storage key within that file
  uint64_t offset = 0;   // first element, in `dtype` elements from the storage's start
  uint64_t count = 0;    // elements; never 0
  torch::DType dtype = torch::DType::kFloat32;  // the storage's element type

  bool operator==(const SourceSlice&) const = default;
};

enum class TensorKind : uint8_t { kParam, kFrozenParam, kBuffer };
std::string_view TensorKindName(TensorKind kind);  // "param", "frozen param", "buffer"

struct OutputTensor {
  std::string name;
  TensorKind kind = TensorKind::kParam;
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<SourceSlice> slices;  // their counts add up to the numel of shape
};

// `name` is the same tensor as `owner`, a name in MergePlan::tensors.
struct Tie {
  std::string name;
  std::string owner;

  bool operator==(const Tie&) const = default;
};

struct MergePlan {
  uint32_t world_size = 0;
  int zero_stage = 0;           // 0-3 (BF16_Optimizer: 1; universal: the stage it came from)
  bool universal = false;       // from a universal checkpoint's zero/<name>/fp32.pt
  bool bf16_optimizer = false;  // stage-1/2 files without a zero_stage key
  // Every output tensor but the ties, in `module` order; a trainable param
  // missing from `module` comes after, in param_shapes order.
  std::vector<OutputTensor> tensors;
  std::vector<Tie> ties;        // in `module` order, then shared_params order
};

struct PlanOptions {
  // Dtype of every floating-point output tensor (--dtype). Unset: float32,
  // except float64 sources, which stay float64.
  std::optional<torch::DType> float_dtype;
  // Leave frozen params, and ties to them, out (--exclude-frozen).
  bool exclude_frozen = false;
};

// Plans the merge of `ckpt`. World size = the number of optim-states files
// (ZeRO-0: dp_world_size). ZeRO-0 (no optim-states files): fp16 params from
// ckpt.zero0_masters (zero/link.h), fp32 training's params from `module`.
// Universal (ckpt.universal): params from ckpt.universal_params, the rest
// as for the stage it came from. param_shapes None with optim-states files
// (v0.18.5+ stage-0 bf16) takes the param order from param_slice_mappings
// and the shapes from `module`.
// Errors (path = the file concerned, record = the tensor name, if any):
//   kUnsupported: tensor, pipeline or expert parallelism recorded
//     (checkpoint_parallel_dimensions, ds_autoep_layers, num_experts);
//     ZeRO-0 fp16 masters not linked; param groups partitioned over different world sizes
//     (MoE); a stage-3 checkpoint without frozen fragments whose `module`
//     still names frozen params (unless exclude_frozen); a non-contiguous
//     frozen param or buffer in `module`.
//   kNotFound: fewer rank files than partition_count says (stage 3: also
//     model-states files); no optim states; no model states.
//   kCorrupt: more rank files than partition_count says; ranks that disagree
//     on the stage, the world size or the recorded shapes; partitions whose
//     lengths do not fit the recorded shapes (the numbers are in the
//     message); param_slice_mappings that contradict a placement; buffers
//     missing from `module`; duplicated names; a `module` name that is no
//     param, buffer, tie or frozen param when frozen params are recorded.
//   kInvalidArgument: optim_states not in rank order, several model states
//     for stage 1/2, a non-floating float_dtype.
Result<MergePlan> PlanMerge(const ZeroCheckpoint& ckpt, const PlanOptions& options = {});

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_PLAN_H_
