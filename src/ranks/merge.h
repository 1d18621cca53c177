// A folder of per-rank DTensor state dicts (ranks/folder.h: verl, SkyRL)
// planned for `zerofold merge` (merge/merge.h writes it): each rank file's
// pickle read (ranks/values.h; no tensor bytes), each DTensor's local
// shard placed as the box ranks/shard.h computes from its mesh
// coordinates and placements, plain tensors as the whole tensor, one
// gather plan of the full tensors whose pieces tile each tensor exactly
// (gather::CheckTiling). A box held by several ranks (Replicate
// placements, a buffer every rank saves) is one piece, read from the
// lowest rank, after the copies of every other rank were found equal to
// it by xxh3-128 of their bytes: a difference refuses, naming the tensor
// and the two ranks. Never concatenated, never trusted from one rank.
// Dtypes as saved unless a dtype is given.
//
// `select` "optimizer" (or "optim") merges the optim files instead: the
// state of optimizer.state_dict() ({"state": {id: {"exp_avg": DTensor,
// ...}}}) as "state.<param>.<name>", the param ids named after the model
// file's DTensor keys in order (model.parameters() order, as torch.optim
// numbers them) when their count and shapes agree, else kept as numbers.
// Memory: O(pickles + plan); hashing reads each replicated copy once
// through a buffer of buffer_bytes.
#ifndef ZEROFOLD_RANKS_MERGE_H_
#define ZEROFOLD_RANKS_MERGE_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/layout.h"
#include "gather/plan.h"
#include "ranks/folder.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ranks {

// What a refusal of unsafe globals in rank files says to do.
inline constexpr std::string_view kUnsafeHint =
    "torch.load(weights_only=True) refuses them too; --keep-unsafe merges the tensors (the globals are never run)";

struct MergeOptions {
  std::optional<std::string> select;   // unset or "model": the model files; "optimizer"/"optim"
  std::optional<torch::DType> dtype;   // floating tensors; unset: as saved
  std::vector<std::string> only;       // glob patterns on output names
  bool keep_unsafe = false;            // merge files whose pickles name unsafe globals
  // Hash the copies several ranks hold (false: inspect, which reads no
  // tensor bytes, and leaves the check to merge).
  bool check_copies = true;
  size_t buffer_bytes = size_t{1} << 20;
  torch::ReadOptions read;
};

// What the folder holds, for reports and inspect.
struct Summary {
  int64_t world = 0;
  std::string strategy;                  // RankFolder::strategy
  bool optimizer = false;                // the optim files were merged
  // Each distinct device mesh, "(2, 2) dp, tp", first seen first.
  std::vector<std::string> meshes;
  size_t dtensors = 0, plain = 0;        // output tensors of each kind
  size_t replicated_checked = 0;         // copies hashed and found equal
  bool optimizer_names_mapped = false;   // param ids named after the model's keys
  // Globals off the allowlists (torch's weights_only refuses them), first
  // seen first, and the first file naming one (merged with keep_unsafe).
  std::vector<std::string> unsafe_globals;
  std::string first_unsafe_file;
  // Per output tensor (plan order): its placements, "(Shard(0))", "" for plain.
  std::vector<std::string> placements;
};

struct PlannedMerge {
  // The rank files, open: `gather`'s sources point into them.
  std::vector<std::unique_ptr<RandomSource>> sources;
  gather::GatherPlan gather;
  gather::MergeLayout layout;
  std::vector<std::string> input_files;  // the rank files read, by rank
  Summary summary;
  std::vector<std::pair<std::string, std::string>> warnings;  // (path, message)
};

// Plans the merge of `folder`. Errors (path: the rank file or the folder;
// record: the tensor):
//   kUnsafe       a rank file naming globals off the allowlists (as torch's
//                 weights_only judges them; torch 2.6 refuses _StridedShard
//                 too) without keep_unsafe;
//   kCorrupt      what ReadCheckpoint and FindValues refuse; a tensor whose
//                 shape, dtype or kind differs between ranks, whose local
//                 shape is not its box's, whose boxes leave a gap or
//                 overlap; replicated copies with different bytes;
//   kUnsupported  placements LocalBox does not read (Partial); optim files
//                 of plain tensors only (FSDP1's flat-param slices) over
//                 several ranks;
//   kInvalidArgument  a select other than model/optimizer, or optimizer
//                 with no optim files; what gather::LayOut refuses.
Result<PlannedMerge> PlanRankMerge(Env* env, const RankFolder& folder, const MergeOptions& options);

}  // namespace zerofold::ranks

#endif  // ZEROFOLD_RANKS_MERGE_H_
