// What `common.pt` of a torch_dist folder says: the non-sharded state
// Megatron's save_common writes with torch.save (Megatron-LM: `args`, an
// argparse.Namespace, `iteration`, `checkpoint_version`, `optimizer`
// param groups, `content_metadata`; NeMo 2: `global_step`, `epoch`). Its
// pickle is interpreted like every pickle: nothing runs, a class no
// reader knows stays an opaque object, and only plain values are taken.
#ifndef ZEROFOLD_MEGATRON_COMMON_H_
#define ZEROFOLD_MEGATRON_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json/value.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

// The training arguments inspect shows, in this order, when present.
inline constexpr const char* kShownArgs[] = {
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "group_query_attention", "kv_channels", "swiglu", "num_experts", "moe_layer_freq", "moe_ffn_hidden_size",
    "moe_router_topk", "moe_grouped_gemm", "tensor_model_parallel_size", "pipeline_model_parallel_size",
    "expert_model_parallel_size", "expert_tensor_parallel_size", "context_parallel_size", "data_parallel_size",
    "world_size", "padded_vocab_size", "max_position_embeddings", "position_embedding_type", "normalization",
    "untie_embeddings_and_output_weights", "add_bias_linear", "add_qkv_bias", "params_dtype", "bf16", "fp16",
    "use_distributed_optimizer", "ckpt_format", "transformer_impl"};

// content_metadata's key naming the distributed optimizer's form
// (megatron/training/checkpointing.py).
inline constexpr const char* kShardingTypeKey = "distrib_optim_sharding_type";

struct CommonState {
  bool present = false;                   // the folder holds common.pt
  std::optional<int64_t> iteration;       // `iteration`, or NeMo's `global_step`
  std::optional<double> checkpoint_version;
  bool has_args = false;                  // an `args` object
  // kShownArgs present in `args`, as plain values: None, bools, ints,
  // floats, strings, torch dtypes as "torch.bfloat16", lists of those.
  std::vector<std::pair<std::string, json::Value>> args;
  // content_metadata's plain entries.
  std::vector<std::pair<std::string, json::Value>> content_metadata;
  std::string sharding_type;              // content_metadata[kShardingTypeKey], "" when absent
  bool has_optimizer = false;             // an `optimizer` entry (param groups, common step)
  std::vector<std::string> top_keys;      // the root dict's str keys, in order
  std::vector<std::string> unsafe_globals;  // named, never run
};

// Reads `folder`/common.pt (present = false when there is none). Errors
// of the torch reader, with the file's path; kCorrupt when its root is no
// dict (kUnsafe naming its unsafe globals when it has any: torch.load runs
// them whatever the root).
inline constexpr std::string_view kUnsafeCommonHint =
    "merge writes nothing of common.pt; --keep-unsafe merges the tensors anyway";
Result<CommonState> ReadCommon(Env* env, const std::string& folder, const torch::ReadOptions& read);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_COMMON_H_
