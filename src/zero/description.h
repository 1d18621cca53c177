// The description of a DeepSpeed ZeRO checkpoint that the merge planner works
// on: what the model-states and optim-states files record, reduced to names,
// shapes and tensor metadata. Built from the files by extract.h, or by hand in
// tests. Plain values: no references into a pickle graph or a file.
//
// Field names follow DeepSpeed's keys (see README.md in this folder). An
// optional field is nullopt when the key is absent or holds None.
#ifndef ZEROFOLD_ZERO_DESCRIPTION_H_
#define ZEROFOLD_ZERO_DESCRIPTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torch/dtype.h"

namespace zerofold::zero {

// A tensor as a file records it: enough to find its elements in a storage
// record and to tell whether two names are one view. Sizes, strides and the
// offset are in elements, as torch records them.
struct TensorMeta {
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  std::string storage;         // the storage key within its file ("0", "7")
  int64_t storage_offset = 0;

  bool operator==(const TensorMeta&) const = default;
};

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;

  bool operator==(const NamedShape&) const = default;
};

struct NamedTensor {
  std::string name;
  TensorMeta tensor;

  bool operator==(const NamedTensor&) const = default;
};

// shared_params entry: `name` holds no data of its own; it is `owner`.
struct SharedParam {
  std::string name;
  std::string owner;

  bool operator==(const SharedParam&) const = default;
};

// param_slice_mappings entry: the param's fragment within this rank's
// partition of the group (DeepSpeed's fragment_address).
struct SliceMapping {
  std::string name;
  int64_t start = 0;
  int64_t numel = 0;

  bool operator==(const SliceMapping&) const = default;
};

// ZeRO-0: which wrapper's state_dict() the model states' `optimizer` holds,
// told by its fp32 key (deepspeed/runtime/fp16/fused_optimizer.py,
// unfused_optimizer.py, bf16_optimizer.py state_dict()).
enum class Zero0Optimizer : uint8_t {
  kNone,              // `optimizer` is None or absent
  kFp16Fused,         // FP16_Optimizer: fp32_groups_flat, one flat tensor per group
  kFp16Unfused,       // FP16_UnfusedOptimizer: fp32_groups, one tensor per param
  kBf16,              // BF16_Optimizer: single_partition_of_fp32_groups (v0.18.5+ stage 0)
  kTorch,             // none of those keys: the client optimizer's own state (fp32 training)
};
std::string_view Zero0OptimizerName(Zero0Optimizer kind);  // "FP16_Optimizer", ...

// One *_model_states.pt.
struct ModelStates {
  std::string file;  // the path, for messages
  std::vector<std::vector<NamedShape>> param_shapes;  // per param group (stage 3: sub-group)
  bool param_shapes_recorded = true;  // false: `param_shapes` is None (ZeRO-0)
  std::vector<std::string> buffer_names;
  std::optional<std::vector<NamedShape>> frozen_param_shapes;
  std::optional<std::vector<NamedTensor>> frozen_param_fragments;
  std::optional<std::vector<SharedParam>> shared_params;
  std::vector<NamedTensor> module;   // the module state dict, in its order
  bool has_optimizer = false;        // `optimizer` is not None (ZeRO-0 keeps it here)
  Zero0Optimizer optimizer_kind = Zero0Optimizer::kNone;
  // The fp32 masters in `optimizer`, per param group: kFp16Fused and kBf16
  // one flat tensor per group, kFp16Unfused one tensor per param.
  std::vector<std::vector<TensorMeta>> optimizer_fp32_groups;
  std::optional<int64_t> dp_world_size;
  // checkpoint_parallel_dimensions (v0.19.5+): {pp_degree, tp_degree}.
  std::optional<int64_t> pp_degree;
  std::optional<int64_t> tp_degree;
  bool has_autoep_layers = false;    // ds_autoep_layers is not None (AutoEP, v0.19+)
  std::optional<std::vector<int64_t>> num_experts;  // MoE checkpoints: experts per MoE layer
  std::string ds_version;

  bool operator==(const ModelStates&) const = default;
};

enum class Fp32GroupsKey : uint8_t {
  kSinglePartitionOfFp32Groups,  // "single_partition_of_fp32_groups": stage 1/2, BF16_Optimizer
  kFp32FlatGroups,               // "fp32_flat_groups": stage 3
};

// One [bf16_]zero_pp_rank_R_mp_rank_00_optim_states.pt: its
// optimizer_state_dict, less the optimizer's own state.
struct OptimStates {
  std::string file;  // the path, for messages
  uint32_t rank = 0;                  // R of the file name
  std::optional<int64_t> zero_stage;  // 0-3; absent in BF16_Optimizer files
  std::vector<int64_t> partition_count;  // stage 1/2: one per group; stage 3: the int
  bool partition_count_is_list = false;
  Fp32GroupsKey fp32_groups_key = Fp32GroupsKey::kSinglePartitionOfFp32Groups;
  std::vector<TensorMeta> fp32_groups;   // this rank's fp32 partition, per group
  std::optional<std::vector<int64_t>> group_paddings;
  std::optional<std::vector<std::vector<SliceMapping>>> param_slice_mappings;  // per group
  // NVMe offload (stage 3): per group, the index into
  // ZeroCheckpoint::param_files of the swap file holding the partition
  // (then fp32_groups[g] describes that file's flat float32 data), or -1.
  std::vector<int64_t> offloaded_file;

  bool operator==(const OptimStates&) const = default;
};

// A universal checkpoint's zero/<name>/fp32.pt: the param's full fp32
// value (TP = 1), `file` indexing ZeroCheckpoint::param_files.
struct UniversalParam {
  std::string name;
  uint32_t file = 0;
  TensorMeta tensor;        // `param` of the dict, or the file's root tensor
  bool has_tp_keys = false; // cat_dim / vocab_tensor / sub_param_shape present

  bool operator==(const UniversalParam&) const = default;
};

struct ZeroCheckpoint {
  // Stage 1/2: the one mp_rank_00_model_states.pt. Stage 3: one per rank, in
  // rank order.
  std::vector<ModelStates> model_states;
  std::vector<OptimStates> optim_states;  // in rank order
  // ZeRO-0 fp16: each fp32 master linked to its param (zero/link.h), in
  // group order; the tensors are in model_states[0].
  std::vector<NamedTensor> zero0_masters;
  // Universal checkpoints: one per zero/<name>/ folder, sorted by name.
  bool universal = false;
  int universal_stage = 0;  // 3 when the model states are per rank (zero_pp_rank_R), else 0
  std::vector<std::string> param_files;  // paths, for messages
  std::vector<UniversalParam> universal_params;

  bool operator==(const ZeroCheckpoint&) const = default;
};

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_DESCRIPTION_H_
