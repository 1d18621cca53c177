// zerofold inspect: what each PATH is and what it holds, from directories,
// pickles and headers only (never tensor bytes). The one place that decides
// the kind of an input, for the CLI (`zerofold inspect`) and the C API
// (zf_inspect_json); the listings themselves come from their formats'
// folders (model/listing.h, dcp/listing.h, megatron/inspect.h,
// zero/inspect.h) and a Hugging Face folder's total from shrink's own plan
// (rewrite/shrink.h TotalOfFolder).
//
// A PATH is tried, in this order, as:
//   1. a Megatron-Core / NeMo 2 torch_dist checkpoint (megatron::InspectPath);
//   2. a folder of per-rank DTensor files (ranks::InspectPath: verl, SkyRL);
//   2b. a PyTorch Distributed Checkpoint folder (dcp::ListDcpPath);
//   3. a DeepSpeed checkpoint folder or tag folder (zero::IsDeepSpeedFolder);
//   4. a torch or safetensors file, or a Hugging Face model folder
//      (model::ResolveModelPath): each checkpoint file listed, then, for a
//      folder, the folder's total.
// The first kind that claims the PATH describes it, or reports why it could
// not (a corrupt .metadata is the DCP's error, not "no model file").
#ifndef ZEROFOLD_INSPECT_INSPECT_H_
#define ZEROFOLD_INSPECT_INSPECT_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dcp/listing.h"
#include "megatron/inspect.h"
#include "ranks/inspect.h"
#include "model/listing.h"
#include "zero/inspect.h"
#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zerofold/status.h"

namespace zerofold::inspect {

// What a PATH turned out to be.
enum class Kind {
  kUnknown,    // none of the kinds below; `error` says why (model::ResolveModelPath)
  kFile,       // one torch or safetensors file
  kHfFolder,   // a Hugging Face model folder
  kDcp,        // a PyTorch Distributed Checkpoint folder
  kMegatron,   // a Megatron-Core torch_dist checkpoint
  kDeepSpeed,  // a DeepSpeed checkpoint folder or tag folder
  kRanks,      // a folder of per-rank DTensor files (verl, SkyRL)
};

// One checkpoint file of a kFile or kHfFolder PATH: its listing, or why it
// could not be listed (the status names the file).
struct FileReport {
  std::string path;
  Result<model::Listing> listing = Status::Internal("not listed");
};

// What `convert --dequantize` would do with a quantized safetensors file or
// folder (rewrite/dequantize.h PlanFiles): the scheme, each group's inputs
// and the tensor it becomes; or why it would refuse.
struct Quantized {
  std::string method;                // quant_method; "" when the names decide
  std::vector<std::string> schemes;  // quant::SchemeName of each found
  struct Group {
    std::string name;                // the tensor --dequantize writes
    std::string scheme;
    std::vector<uint64_t> shape;
    std::vector<std::string> inputs; // the tensors it replaces, weight first
  };
  std::vector<Group> groups;
  size_t kept = 0;                   // tensors written as they are
  Status refusal;                    // not OK: --dequantize would refuse (groups empty)
};

// One PATH. Exactly one of: `error` not OK (the PATH failed as a whole,
// while reading it as `kind`; nothing else is set), or the member of its
// kind: `files` (kFile: one; kHfFolder: each checkpoint file, in the
// folder's order) with `folder` for kHfFolder, `dcp`, `megatron`, or
// `deepspeed`.
struct PathReport {
  std::string path;
  Kind kind = Kind::kUnknown;
  Status error;
  std::vector<FileReport> files;
  std::optional<model::FolderTotal> folder;
  // A kFile or kHfFolder of safetensors with quantization_config in its
  // config.json or quantized weights by their names: --dequantize's plan.
  std::optional<Quantized> quantized;
  std::optional<dcp::Listing> dcp;
  std::optional<megatron::Inspection> megatron;
  std::optional<zero::ZeroInspection> deepspeed;
  std::optional<ranks::Inspection> ranks;
};

struct Report {
  std::vector<PathReport> paths;  // in the order given

  // Calls `fn` with every failure, in document order: a PATH's error, or
  // its files' errors. (A Megatron or DeepSpeed merge refusal is part of a
  // description, not a failure.)
  void ForEachError(const std::function<void(const Status&)>& fn) const;
  // The first failure, OK when every PATH and file was described.
  Status FirstError() const;
};

// Inspects every PATH of `paths` over `env` with `options`' limits (the
// torch reader's for pickles and archives, the safetensors header limit),
// in order. `on_path`, if set, is called with each PATH's report as soon as
// it is made (before the next PATH is read), so a caller can show reports
// as they come. Failures are in the report, never returned.
Report Inspect(Env* env, const std::vector<std::string>& paths, const model::ListOptions& options,
               const std::function<void(const PathReport&)>& on_path = {});

// The PATH's report alone (Inspect's step).
PathReport InspectPath(Env* env, const std::string& path, const model::ListOptions& options);

}  // namespace zerofold::inspect

#endif  // ZEROFOLD_INSPECT_INSPECT_H_
