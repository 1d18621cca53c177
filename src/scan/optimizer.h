// The one rule by which `zerofold scan` counts optimizer state, in every
// form it reads (torch files, safetensors, DCP and torch_dist chunks).
#ifndef ZEROFOLD_SCAN_OPTIMIZER_H_
#define ZEROFOLD_SCAN_OPTIMIZER_H_

#include <string>
#include <vector>

#include "torch/checkpoint.h"

namespace zerofold::scan {

// The optimizer-state rule, one for every form. `path` is a tensor's key
// path: a torch file's path elements (torch::Tensor::path, integers in
// decimal), a DCP or torch_dist key split at its dots. It is optimizer
// state when
//   (a) its first element names an optimizer's state as trainers save it:
//       "optimizer", "optim", "optimizer_state_dict" (DeepSpeed's
//       *optim_states.pt), "optimizer_states", "optimizers"; or
//   (b) it ends in "state", PARAM..., NAME with NAME one of torch.optim's
//       per-parameter state names (dcp::kOptimizerStateNames: exp_avg,
//       exp_avg_sq, step, momentum_buffer, ...): an optimizer's
//       state_dict() saved anywhere, or alone.
// The bytes counted are each such tensor's logical bytes (numel x
// itemsize; a DCP chunk's, in the .distcp file that stores it). Not
// counted: state saved under other names (DeepSpeed universal checkpoints'
// zero/PARAM/exp_avg.pt files hold {"param": tensor}).
bool IsOptimizerStatePath(const std::vector<std::string>& path);

// A torch path as the rule reads it: each element, integers in decimal,
// every key split at its dots (flat names, as safetensors and DCP keys are,
// read like nested ones).
std::vector<std::string> RulePath(const std::vector<torch::PathElem>& path);
// A DCP key split at its dots.
std::vector<std::string> RulePath(const std::string& key);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_OPTIMIZER_H_
