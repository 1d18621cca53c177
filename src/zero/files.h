// Which files of a DeepSpeed checkpoint tag folder (CKPT/global_stepN/) hold
// what, by name alone. Pure: the caller lists the folder.
#ifndef ZEROFOLD_ZERO_FILES_H_
#define ZEROFOLD_ZERO_FILES_H_

#include <span>
#include <string>
#include <vector>

#include "zerofold/result.h"

namespace zerofold::zero {

struct TagFiles {
  // "mp_rank_00_model_states.pt" (stage 1/2), or "" when absent.
  std::string model_states;
  // zero_pp_rank_R_mp_rank_00_model_states.pt (stage 3), index R.
  std::vector<std::string> rank_model_states;
  // [bf16_]zero_pp_rank_R_mp_rank_00_optim_states.pt, index R.
  std::vector<std::string> optim_states;
};

// Sorts the base names of a tag folder's files into TagFiles; names that are
// no checkpoint files (not ending in _model_states.pt or _optim_states.pt) are
// ignored. Errors, each naming a file found:
//   kUnsupported  layouts merge cannot handle: tensor parallelism
//                 (mp_rank_01 and up), pipeline parallelism (layer_*), MoE
//                 (expp_rank_*, *expert_*), and unrecognized states files;
//   kNotFound     no model-states file; a rank missing among the optim-states
//                 or rank model-states files (e.g. ranks 0, 1, 3);
//   kCorrupt      two files for one rank (bf16_ and plain).
Result<TagFiles> ClassifyTagFiles(std::span<const std::string> names);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_FILES_H_
