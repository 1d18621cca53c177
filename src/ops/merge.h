// zerofold merge: the full model of a DeepSpeed ZeRO stage 1/2/3 checkpoint,
// as DeepSpeed's zero_to_fp32.py builds it, without loading whole files.
//
// Load (ops/merge_load.h: directories and pickles only), plan
// (zero/plan.h: per tensor, the element ranges of the rank files),
// lay out (ops/merge_layout.h: order, --only, ties), then stream every
// output tensor from its slices through a bounded buffer into a torch zip
// archive (a state dict as torch.save writes one; tied names share their
// owner's storage) or a safetensors file, sharded past max_shard_bytes as
// Hugging Face shards with an index. Only the fp32 partitions and the
// module's frozen params and buffers are read; Adam moments never are.
// Memory: O(buffer_bytes + metadata).
//
// Every output file goes through an AtomicFileSink; all of them are
// committed only after the last one is complete (the index last), and when
// a commit fails the files committed before it are removed, so a failure
// leaves no new file behind. (Files replaced under `force` stay replaced.)
#ifndef ZEROFOLD_OPS_MERGE_H_
#define ZEROFOLD_OPS_MERGE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/convert.h"
#include "ops/merge_layout.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zero/plan.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ops {

struct MergeOptions {
  torch::ReadOptions read;
  // The tag folder to merge (--tag); unset: the one `latest` names.
  std::optional<std::string> tag;
  // Dtype of every floating output tensor (--dtype); unset: float32.
  std::optional<torch::DType> dtype;
  // Leave frozen params out (--exclude-frozen).
  bool exclude_frozen = false;
  // Glob patterns on names (--only); empty: every tensor. See LayOutMerge.
  std::vector<std::string> only;
  // Output format (--to). Unset: from OUT's extension (.safetensors), else torch.
  std::optional<MergeFormat> format;
  // A folder OUT is split into shards past this many tensor bytes per file
  // (--max-shard-size; transformers' default, 5 GB). An OUT file is never split.
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  // Replace existing output files (--force); without it they are refused,
  // as are the files of an earlier save in a folder OUT. With it, a folder
  // OUT's earlier save is replaced whole: its other shards are removed.
  bool force = false;
  // Plan only (--dry-run): the report is complete, nothing is written.
  bool dry_run = false;
  // After writing, before any output replaces its target, read every output
  // file back and compare each tensor's xxh3-128 with that of the same bytes
  // assembled anew from the rank files. A difference leaves every target as
  // it was.
  bool verify = false;
  // Bytes per read; memory is O(buffer_bytes + metadata).
  size_t buffer_bytes = size_t{4} << 20;
  // Called with tensor bytes written so far and the total, at most once
  // per buffer; phase is "merge" or "verify".
  std::function<void(const char* phase, uint64_t done, uint64_t total)> progress;
};

struct MergeReport {
  std::string checkpoint;   // CKPT_DIR as given
  std::string tag_folder;
  std::string tag;
  std::string ds_version;
  std::vector<std::string> input_files;  // model states, then optim states in rank order, then universal fp32.pt files
  size_t model_files = 0, optim_files = 0;  // how many of input_files are of each kind
  zero::MergePlan plan;
  MergeLayout layout;
  MergeFormat format = MergeFormat::kTorch;
  std::vector<MergeOutputFile> files;
  std::string index;        // the index file written, "" when unsharded
  std::vector<std::string> removed;  // files of an earlier save removed from a folder OUT (force)
  uint64_t tensor_bytes = 0;  // data bytes written (a tie's copy counts in safetensors only)
  uint64_t bytes_read = 0;    // source bytes read to write them (not counting verify)
  size_t params = 0, frozen_params = 0, buffers = 0, ties = 0;  // entries of each kind
  bool verified = false;
  size_t verified_tensors = 0;
  uint64_t verified_bytes = 0;
  std::vector<std::pair<std::string, std::string>> warnings;  // (path, message)
};

// Merges the checkpoint in `ckpt_dir` (see FindTagFolder) into `out`: a file
// when it ends in .bin, .pt or .safetensors, else a folder (created) that
// receives pytorch_model.bin / model.safetensors, or shards and an index.
// Errors carry the path of the file concerned and, from the planner, the
// numbers: see FindTagFolder, LoadZeroCheckpoint, zero::PlanMerge and
// LayOutMerge; also kInvalidArgument for an output that exists (without
// force), --to that contradicts OUT's extension, or a --dtype that is no
// floating type; kCorrupt naming the file and tensor when --verify finds a
// difference.
Result<MergeReport> MergeCheckpoint(Env* env, const std::string& ckpt_dir, const std::string& out,
                                    const MergeOptions& options);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_MERGE_H_
