// `zerofold inspect` of a folder of per-rank DTensor files (ranks/folder.h):
// the world size, the strategy fsdp_config.json names, the device meshes,
// each tensor merge would write (dtype, global shape, placements, the
// boxes it is read from) and merge's outlook: what it would refuse and
// why. From the pickles only: no tensor bytes (replicated copies are
// hashed by merge, not here).
#ifndef ZEROFOLD_RANKS_INSPECT_H_
#define ZEROFOLD_RANKS_INSPECT_H_

#include <optional>
#include <string>
#include <vector>

#include "json/writer.h"
#include "ranks/folder.h"
#include "ranks/merge.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ranks {

struct TensorRow {
  std::string name;
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
  std::string placements;  // "(Shard(0))"; "" for a plain tensor
  size_t pieces = 0;       // distinct boxes merge reads
};

struct Inspection {
  RankFolder folder;
  Summary summary;             // of the model files
  std::vector<TensorRow> tensors;
  // OK, or why merge would refuse the model files: the planner's refusal,
  // or kUnsafe naming the first file with globals torch's weights_only
  // refuses (the tensors are described all the same).
  Status outlook;
};

// nullopt when `path` is no folder of rank files; FindRankFolder's errors.
Result<std::optional<Inspection>> InspectPath(Env* env, const std::string& path, const torch::ReadOptions& read);

void WriteInspectionJson(json::Writer& w, const Inspection& i);

}  // namespace zerofold::ranks

#endif  // ZEROFOLD_RANKS_INSPECT_H_
