// zerofold merge: the full model of a DeepSpeed ZeRO stage 1/2/3 checkpoint,
// as DeepSpeed's zero_to_fp32.py builds it, or of a PyTorch Distributed
// Checkpoint folder, without loading whole files.
//
// Recognize the folder, plan it with its family's planner (zero/merge.h:
// directories and pickles, the element ranges of the rank files; dcp/merge.h:
// the chunk boxes of .metadata), each giving a gather plan and its layout
// (gather/layout.h: order, --only, ties), then write (merge/output.h: every output tensor streamed
// from its pieces through a bounded buffer into a torch zip archive or a
// safetensors file, sharded past max_shard_bytes as Hugging Face shards
// with an index; atomic). Only the fp32 partitions and the module's frozen
// params and buffers are read; Adam moments never are.
// Memory: O(buffer_bytes + metadata).
#ifndef ZEROFOLD_MERGE_MERGE_H_
#define ZEROFOLD_MERGE_MERGE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dcp/plan.h"
#include "gather/layout.h"
#include "gather/plan.h"
#include "hfexport/export.h"
#include "megatron/folder.h"
#include "megatron/merge.h"
#include "merge/output.h"
#include "ranks/merge.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zero/plan.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::merge {

using gather::MergeFormat;
using gather::MergeFormatName;
using gather::MergeLayout;
using gather::MergeOutputFile;
using gather::OutputEntry;

// The output options (merge/output.h: --to, --max-shard-size, --force,
// --dry-run, --verify, buffer size, progress, read limits) and the ZeRO
// planner's.
struct MergeOptions : OutputOptions {
  // The tag folder to merge (--tag); unset: the one `latest` names. For a
  // Megatron-LM checkpoint: the iteration (a number, `release` or a folder
  // name); unset: the one latest_checkpointed_iteration.txt names.
  std::optional<std::string> tag;
  // Dtype of every floating output tensor (--dtype); unset: float32.
  std::optional<torch::DType> dtype;
  // Leave frozen params out (--exclude-frozen).
  bool exclude_frozen = false;
  // Glob patterns on names (--only); empty: every tensor. See gather::LayOut.
  std::vector<std::string> only;
  // DCP and Megatron: the key subtree to merge (--select); unset: model
  // weights (dcp::SelectKeys).
  std::optional<std::string> select;
  // Megatron only: split stacked layers and experts (--unstack).
  bool unstack = false;
  // DeepSpeed: merge rank files whose pickles name unsafe globals
  // (pickle/safety.h; --keep-unsafe), with a warning; without it such a
  // file is kUnsafe. Megatron: the same for the folder's common.pt, which
  // is judged only (nothing of it is merged). The globals are never run and never carried (merge
  // writes only tensors). DCP chunk archives and .metadata with unsafe
  // globals are refused either way (dcp/plan.cc, dcp/metadata.cc): zerofold
  // locates their tensors through the pickle's known schema.
  bool keep_unsafe = false;
  // --hf BASE (every kind of checkpoint merge reads): write a Hugging Face folder
  // of BASE's names, shapes and dtypes (hfexport/export.h: a family
  // table maps the trainer's tensors; everything is checked against BASE
  // before a byte is written; `dtype` overrides BASE's dtypes), safetensors
  // shards and index, with BASE's config, generation config and tokenizer
  // files copied. OUT must be a folder.
  std::optional<std::string> hf_base;
  std::vector<std::string> hf_tables;  // --hf-table files (user tables first)
  bool drop_unmapped = false;          // --drop-unmapped
};

enum class CheckpointKind : uint8_t { kZero, kDcp, kMegatron, kRanks };

struct MergeReport : OutputReport {
  CheckpointKind kind = CheckpointKind::kZero;
  std::string checkpoint;   // CKPT_DIR as given
  std::string tag_folder;
  std::string tag;
  std::string ds_version;
  std::vector<std::string> input_files;  // ZeRO: model states, then optim states in rank order, then
                                         // universal fp32.pt files; DCP: .metadata, then the .distcp files read
  size_t model_files = 0, optim_files = 0;  // ZeRO: how many of input_files are of each kind
  zero::MergePlan plan;      // ZeRO only
  // The tensors as the writer reads them. The sources are closed when the
  // merge returns: their paths stay, their `source` pointers are null.
  gather::GatherPlan gather;
  MergeLayout layout;
  size_t params = 0, frozen_params = 0, buffers = 0;  // ZeRO: entries of each kind
  // DCP only: the folder with .metadata, its schema and version, and the
  // keys selected and left out.
  std::string dcp_folder;
  bool dcp_schema_2x = false;
  std::string dcp_version;
  dcp::Selection selection;
  // Megatron only (dcp_folder is its torch_dist folder).
  megatron::Folder megatron;
  std::string core_version;
  megatron::OptimizerForm optimizer = megatron::OptimizerForm::kNone;
  size_t nd_restored = 0, unstacked_keys = 0;
  // Per-rank DTensor files only (verl, SkyRL: ranks/merge.h).
  ranks::Summary ranks;
  std::vector<std::pair<std::string, std::string>> warnings;  // (path, message)
  // --hf only: the table used and what it left out.
  std::string hf_table, hf_family, hf_source;
  std::vector<std::string> hf_unmapped, hf_dropped;
};

// Merges the checkpoint in `ckpt_dir` into `out`: a Megatron torch_dist
// checkpoint (megatron::FindFolder) as megatron/merge.h plans it; a folder
// of per-rank DTensor state dicts (ranks::FindRankFolder: verl, SkyRL) as
// ranks/merge.h plans it, its huggingface/ files copied; a DCP
// folder (or one holding pytorch_model_fsdp_0/, dcp::FindDcpFolder) as
// MergeDcp does; else a
// DeepSpeed checkpoint (see FindTagFolder). `out` is read by output/target.h
// (merge::ResolveOutput): a file when its name says a format, else a folder
// (created) that receives pytorch_model.bin / model.safetensors, or shards
// and an index, and the model files of `ckpt_dir` (output/folder.h
// ModelFileNames: config, tokenizer; a Trainer's checkpoint-N/).
// Errors carry the path of the file concerned and, from the planner, the
// numbers: see FindTagFolder, LoadZeroCheckpoint, zero::PlanMerge and
// LayOutMerge; also kInvalidArgument for what output/target.h refuses (an
// output that exists without force, --to that contradicts OUT's name, a
// stream OUT, --max-shard-size with a file OUT) or a --dtype that is no
// floating type; kIO for too little free disk; kCorrupt naming the file and
// tensor when --verify finds a difference.
Result<MergeReport> MergeCheckpoint(Env* env, const std::string& ckpt_dir, const std::string& out,
                                    const MergeOptions& options);

}  // namespace zerofold::merge

#endif  // ZEROFOLD_MERGE_MERGE_H_
