// Planning the merge of a PyTorch Distributed Checkpoint folder: which keys
// of `.metadata` come out (selection), and per output tensor the chunks that
// fill it, each located in its .distcp file as a gather piece (gather/plan.h):
// the chunk's box in the global shape, and the strided view of the one
// tensor its embedded torch.save archive holds.
//
// Locating reads each selected chunk's archive directory and pickle (a few
// small reads; no tensor bytes); a `stream.zstd/1` chunk is decompressed up
// to its storage record. Memory: O(metadata).
#ifndef ZEROFOLD_DCP_PLAN_H_
#define ZEROFOLD_DCP_PLAN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcp/metadata.h"
#include "gather/plan.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

// Top-level key groups that are training state, not model weights, by
// their name (Accelerate, plain FSDP, TorchTitan, torch's DCP recipe's
// {"model": ..., "optim": ...}).
inline constexpr const char* kTrainingStateGroups[] = {"optimizer", "optim", "lr_scheduler", "dataloader",
                                                       "train_state"};
// The state names torch.optim's optimizers keep per param (Adam, AdamW,
// Adamax, NAdam, RAdam, SGD, RMSprop, Adagrad, Adadelta, ASGD, Rprop,
// Adafactor): the last component of GROUP.state.<param>.<name> keys.
inline constexpr const char* kOptimizerStateNames[] = {
    "step",   "exp_avg",  "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg",
    "acc_delta", "sum",   "exp_inf",    "mu_product",     "eta",             "mu",         "ax",
    "prev",   "step_size", "row_var",   "col_var",        "variance"};
// The prefix a single model state dict is saved under (Accelerate).
inline constexpr const char* kModelPrefix = "model.";

// Why a top-level group is left out of the default selection.
enum class LeftOutWhy : uint8_t {
  kName,            // its name is a training-state group's (kTrainingStateGroups)
  kOptimizerState,  // what it holds: every tensor key is GROUP.state.<param>.<state name>
                    // (kOptimizerStateNames) or under GROUP.param_groups
  kNotSelected,     // --select chose other keys
};
std::string_view LeftOutWhyName(LeftOutWhy why);  // "name", "optimizer state", "not selected"

// The top-level groups (first dot-components) of md's tensor keys that
// are training state, by name or by what they hold, and why.
std::map<std::string, LeftOutWhy> TrainingStateGroups(const Metadata& md);

// The group a key belongs to: its first dot-component when that is one of
// `training` (TrainingStateGroups), else "model".
std::string KeyGroup(const std::map<std::string, LeftOutWhy>& training, const std::string& key);

struct Selection {
  // Tensor keys selected, in .metadata order, with their output names.
  std::vector<size_t> entries;       // indexes into Metadata::entries
  std::vector<std::string> names;    // parallel to entries
  bool stripped_model_prefix = false;
  // Tensor keys left out, by their first dot-component ("optimizer": 12),
  // and why each group was.
  std::map<std::string, size_t> left_out;
  std::map<std::string, LeftOutWhy> left_out_why;
  size_t non_tensor = 0;             // BytesStorageMetadata keys (never output)
};

// Default (`select` unset): every tensor key outside the training-state
// groups (TrainingStateGroups); when all of those start with "model.",
// that prefix is stripped once (torch's recipe and Accelerate save the
// model under "model"; a model whose own names merely start with "model."
// beside others, as Hugging Face's "model.layers..." and "lm_head", keeps
// every name as it is). With `select`: the tensor keys equal to it or
// under it (`select` + "."), names as stored; "" selects every tensor key.
// kInvalidArgument when `select` matches no tensor key.
Result<Selection> SelectKeys(const Metadata& md, const std::optional<std::string>& select);

struct PlanOptions {
  // Dtype of every floating output tensor (--dtype); unset: as saved.
  std::optional<torch::DType> float_dtype;
  torch::ReadOptions read;  // limits for each chunk's archive
};

// The .distcp files of a folder, opened as chunks name them.
struct OpenFiles {
  std::vector<std::string> paths;                     // folder + "/" + relative path
  std::vector<std::unique_ptr<RandomSource>> sources;
  std::map<std::string, uint32_t> index;              // relative path -> position
};

// Plans the selected tensors of `md` (the folder's metadata). Errors (path:
// the data file, or the .metadata file (the folder for the safetensors
// form); record: the key):
//   kCorrupt      chunks that leave a gap, overlap, or lie outside the
//                 shape; a chunk without storage_data, or whose
//                 [offset, offset + length) overflows or passes its file's
//                 end; a chunk archive that holds no single tensor of the
//                 chunk's dtype and sizes; damage the readers find;
//   kUnsupported  a transform other than stream.zstd/1; a relative path
//                 leaving the folder;
//   kNotFound/kIO opening a file.
// The plan's sources point into `files`, which must outlive it.
Result<gather::GatherPlan> PlanDcp(Env* env, const std::string& folder, const Metadata& md, const Selection& selection,
                                  const PlanOptions& options, OpenFiles* files);

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_PLAN_H_
