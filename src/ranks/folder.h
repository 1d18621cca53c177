// A folder of per-rank state dicts as verl's FSDPCheckpointManager and
// SkyRL's FSDP strategy save them: for every rank r of a world of W,
// model_world_size_{W}_rank_{r}.pt (torch.save(model.state_dict()): FSDP2
// DTensors, or FSDP1's SHARDED_STATE_DICT, DTensors when FSDP1 was given a
// device mesh as verl gives it), optim_world_size_{W}_rank_{r}.pt
// (optimizer.state_dict()) and extra_state_world_size_{W}_rank_{r}.pt
// (scheduler, rng); fsdp_config.json ({"FSDP_version": 2, "world_size": W}
// from verl, {"fsdp_strategy": "fsdp2", "world_size": W} from SkyRL); and
// huggingface/ (config, generation config and tokenizer files, rank 0's).
#ifndef ZEROFOLD_RANKS_FOLDER_H_
#define ZEROFOLD_RANKS_FOLDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ranks {

inline constexpr const char* kFsdpConfigFile = "fsdp_config.json";
inline constexpr const char* kHfFolder = "huggingface";

struct RankFolder {
  std::string path;
  int64_t world = 0;
  std::vector<std::string> model_files;  // paths, by rank
  std::vector<std::string> optim_files;  // by rank; empty when the folder has none
  bool has_config = false;               // fsdp_config.json
  std::string strategy;                  // "fsdp2", or "FSDP_version N"; "" without a config
  std::string hf_folder;                 // path of huggingface/; "" when absent
};

// "model" (or "optim") + "_world_size_" + W + "_rank_" + r + ".pt".
std::string RankFileName(const char* kind, int64_t world, int64_t rank);

// nullopt when `dir` holds no model_world_size_*_rank_*.pt file. kCorrupt
// (path: the folder or the file) for files of two world sizes, a rank
// outside its world, a missing rank's model file (every rank is needed:
// a rank's file holds its shard), optimizer files for some ranks only,
// and an fsdp_config.json whose world_size differs from the files';
// kNotFound for a folder without rank files whose actor/ or critic/
// holds them (verl's global_step_N/), naming them.
Result<std::optional<RankFolder>> FindRankFolder(Env* env, const std::string& dir);

}  // namespace zerofold::ranks

#endif  // ZEROFOLD_RANKS_FOLDER_H_
