// Finding a Megatron-Core `torch_dist` checkpoint: the folder Megatron's
// dist_checkpointing.save writes (`metadata.json` naming the torch_dist
// backend, `common.pt`, `.metadata`, `__<rank>_<n>.distcp`), given
// directly or through the parent its trainer saves it in:
//   Megatron-LM  `latest_checkpointed_iteration.txt` (an iteration number
//                or `release`) beside `iter_%07d/` (or `release/`), the
//                torch_dist folder (megatron/training/checkpointing.py);
//   NeMo 2       `weights/` (the torch_dist folder) beside `context/`.
#ifndef ZEROFOLD_MEGATRON_FOLDER_H_
#define ZEROFOLD_MEGATRON_FOLDER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

inline constexpr const char* kConfigFile = "metadata.json";  // dist_checkpointing's CONFIG_FNAME
inline constexpr const char* kCommonFile = "common.pt";
inline constexpr const char* kTrackerFile = "latest_checkpointed_iteration.txt";
inline constexpr const char* kReleaseTag = "release";
inline constexpr const char* kNemoWeights = "weights";
inline constexpr const char* kTorchDistBackend = "torch_dist";

enum class Layout : uint8_t { kBare, kMegatronLm, kNemo };

// "bare", "megatron-lm", "nemo".
const char* LayoutName(Layout layout);

struct Folder {
  std::string checkpoint;  // the path as given
  Layout layout = Layout::kBare;
  std::string torch_dist;  // the torch_dist folder
  // Megatron-LM: the tracker file's text (trimmed) and the folder chosen
  // (iter_0000010, release); "" otherwise.
  std::string tracker;
  std::string iteration_folder;
  // metadata.json.
  std::string sharded_backend;
  int64_t sharded_backend_version = 0;
  std::string common_backend;
  int64_t common_backend_version = 0;
};

// The Megatron checkpoint at `dir`, or nullopt when `dir` is none of the
// three forms (then it may be a plain DCP folder or anything else; a
// metadata.json without a sharded_backend string is another tool's). `tag`
// picks another Megatron-LM iteration than the tracker's: a number (10 ->
// iter_0000010), `release`, or a folder name in `dir`. Errors (path: the
// file concerned):
//   kCorrupt       a tracker that is no iteration number nor `release`;
//   kUnsupported   another sharded backend (zarr); an iteration folder
//                  without metadata.json (Megatron-LM's legacy
//                  mp_rank_XX/ checkpoints);
//   kNotFound      the iteration folder the tracker or `tag` names;
//   kInvalidArgument  `tag` given for a folder that is no Megatron-LM parent.
Result<std::optional<Folder>> FindFolder(Env* env, const std::string& dir, const std::optional<std::string>& tag);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_FOLDER_H_
