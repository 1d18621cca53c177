// Loading a DeepSpeed ZeRO checkpoint for `zerofold merge`: finding the tag
// folder, naming its files (zero/files.h), reading each file's directory and
// pickle (torch::ReadCheckpoint: no storage bytes are read) and describing it
// (zero/extract.h). What is kept per file is the open source and where each
// storage's bytes are; the pickle graphs are dropped, so memory is
// O(metadata).
//
// Thread safety: a LoadedZero is used by one thread at a time; its sources
// are thread-safe for reads.
#ifndef ZEROFOLD_ZERO_LOAD_H_
#define ZEROFOLD_ZERO_LOAD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zero/description.h"
#include "zero/plan.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::zero {

// Where one storage's bytes are in its file: the storage as read, its
// nbytes declared (the record holds at least these), its record's name,
// offset and zip method (a deflated one is read as gather::Transform::kDeflate).
using StorageLocation = torch::Storage;

// One rank file, open for reading.
struct ZeroFile {
  std::string path;  // tag folder + "/" + name
  std::unique_ptr<RandomSource> source;
  std::unordered_map<std::string, StorageLocation> storages;  // by storage key
  std::vector<std::string> unsafe_globals;  // as ReadCheckpoint lists them
};

struct LoadedZero {
  std::string tag_folder;  // the folder holding the rank files
  std::string tag;         // its base name ("global_step2")
  zero::ZeroCheckpoint description;  // `file` fields hold the paths
  std::vector<ZeroFile> model_files;  // parallel to description.model_states
  std::vector<ZeroFile> optim_files;  // parallel to description.optim_states
  std::vector<ZeroFile> param_files;  // parallel to description.param_files (universal)
  // Notes for the user: an unsafe global per file (merge writes only
  // tensors, so nothing of the pickle is carried), files ignored.
  std::vector<std::pair<std::string, std::string>> warnings;  // (path, message)

  // The file a plan slice reads from. REQUIRES: slice comes from a plan of
  // `description`.
  const ZeroFile& FileOf(const zero::SourceSlice& slice) const {
    if (slice.source == zero::SourceKind::kParamFile) return param_files[slice.file];
    return slice.source == zero::SourceKind::kOptimStates ? optim_files[slice.file] : model_files[slice.file];
  }
};

// The name of the file in a checkpoint folder that names the tag to merge.
inline constexpr const char* kLatestFile = "latest";
// ds_to_universal.py's, naming the universal tag folder; read when there is no `latest`.
inline constexpr const char* kLatestUniversalFile = "latest_universal";
// `latest` is a few bytes; more is not a DeepSpeed tag file.
inline constexpr uint64_t kMaxLatestBytes = 4096;

// The tag folder of `ckpt_dir`: ckpt_dir/`tag` when a tag is given; else
// ckpt_dir/<the tag `latest` names>; else, without `latest`, ckpt_dir itself
// (a tag folder given directly). `latest_universal` stands for `latest`
// where only it exists. Errors (path: the file or folder concerned):
//   kNotFound         ckpt_dir or the tag folder does not exist; no `latest`
//                     in a folder whose subfolders hold states files (the
//                     message lists them: give --tag);
//   kInvalidArgument  ckpt_dir is a file; `tag` is not a single folder name;
//   kCorrupt          `latest` is empty, longer than kMaxLatestBytes, or names
//                     no single folder ("../x", "a/b").
Result<std::string> FindTagFolder(Env* env, const std::string& ckpt_dir, const std::optional<std::string>& tag);

// Lists `tag_folder`, classifies its files, reads every model-states and
// optim-states file (directory and pickle only) and describes them. Stage 3
// (zero_pp_rank_R model states) takes the per-rank model-states files; a
// stray mp_rank_00_model_states.pt beside them is ignored with a warning.
// A universal tag folder (a zero/ folder) also gets its zero/<name>/fp32.pt
// files (LoadUniversalParams).
// Errors carry the path of the file concerned: those of ClassifyTagFiles,
// ReadCheckpoint (record, offset), ExtractModelStates/ExtractOptimStates;
// kUnsupported for big-endian archives.
Result<LoadedZero> LoadZeroCheckpoint(Env* env, const std::string& tag_folder, const torch::ReadOptions& read);

// What a DeepSpeed checkpoint needs beyond its rank files (sources.cc):
// a universal checkpoint's zero/<name>/fp32.pt files, and the links of a
// ZeRO-0 fp16 checkpoint's unnamed fp32 masters to their params (zero/link.h).

// The folder of a universal tag folder that holds zero/<param name>/.
inline constexpr const char* kUniversalZeroFolder = "zero";

// True if `tag_folder` holds a universal checkpoint's zero/ folder.
bool IsUniversalTagFolder(Env* env, const std::string& tag_folder);

// Reads every zero/<name>/fp32.pt (directory and pickle only) into
// out->param_files and out->description.universal_params, sorted by name.
// kNotFound naming the folder when one lacks fp32.pt; errors of
// ReadCheckpoint and ExtractUniversalParam with the file's path.
Status LoadUniversalParams(Env* env, const torch::ReadOptions& read, LoadedZero* out);

// NVMe-offloaded stage-3 partitions (DeepSpeed #6963, #7613): a rank whose
// fp32_flat_groups are empty tensors has each sub-group's data in
// <tag>/offloaded_tensors/rank<NN>/<a>_<b>.tensor.swp (a, b: the module-order
// indexes of the sub-group's first and last params, their zero.Init ds_ids).
// Opens those files into out->param_files and points the rank's groups at
// them. kNotFound naming the folder or file when absent; kCorrupt when a
// file is shorter than its partition. Other checkpoints: untouched.
Status LoadOffloadedPartitions(Env* env, LoadedZero* out);

// ZeRO-0 fp16 (no optim-states files, FP16_Optimizer or
// FP16_UnfusedOptimizer state in the model states): fills
// out->description.zero0_masters. by_value: candidates are checked against
// the saved 16-bit values (reads tensor bytes), every link must be unique.
// Otherwise links by structure only and returns the masters left open.
// Other checkpoints: nothing to do, an empty list.
Result<std::vector<std::string>> LinkZero0(LoadedZero* out, bool by_value);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_LOAD_H_
