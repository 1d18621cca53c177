// `merge --hf BASE`: from any planner's gather plan with the trainer's
// names to the plan of a Hugging Face folder, checked against BASE before
// a byte is written. The step is a function of (plan, source kind, BASE,
// options): Megatron's, DCP's and any other planner's plans go through it.
//
//   1. Read BASE (hfexport/base.h): config.json, the weights' names,
//      dtypes and shapes.
//   2. Choose the family table (hfexport/table.h): user tables (--hf-table)
//      before the built-in ones; the first whose source is the
//      checkpoint's and whose model_types (or architectures) name BASE's
//      (a table of model_type "*" only when no other matches). A DCP
//      checkpoint is "hf" when any of its names is a BASE name (FSDP DCP,
//      per-rank DTensor files: names map one to one), else "torchtitan".
//   3. Megatron: stacked layers and experts split (megatron/unstack.h).
//      Apply the table (hfexport/map.h).
//   4. Refuse trainer tensors no rule maps (kUnsupported naming them),
//      unless drop_unmapped (then they are listed in the result).
//   5. The table's ties BASE lists and no rule exported become plan ties
//      (written as copies of their owners). Check against BASE both ways
//      (CheckAgainstBase).
//   6. Output dtype per tensor: `dtype` if given (floating tensors), else
//      BASE's; kUnsupported naming a tensor whose pieces cannot be
//      converted to it (gather::CanConvert).
#ifndef ZEROFOLD_HFEXPORT_EXPORT_H_
#define ZEROFOLD_HFEXPORT_EXPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "hfexport/base.h"
#include "hfexport/table.h"
#include "model/listing.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::hfexport {

enum class SourceKind : uint8_t { kMegatron, kDcp, kHf };

struct HfOptions {
  std::string base;                 // BASE folder
  std::vector<std::string> tables;  // --hf-table files, in order
  bool drop_unmapped = false;       // --drop-unmapped
  std::optional<torch::DType> dtype;  // --dtype
  model::ListOptions list;          // limits for reading BASE
};

struct HfExport {
  gather::GatherPlan plan;           // HF names and dtypes, ties; the trainer plan's sources
  std::vector<std::string> order;    // BASE's names, in its order (the layout's)
  std::string table;                 // the table's path ("builtin:...")
  std::string family;
  std::string source;                // megatron | torchtitan | hf
  std::vector<std::string> unmapped; // trainer tensors left out (drop_unmapped)
  std::vector<std::string> dropped;  // trainer tensors drop rules left out
  std::vector<std::string> copies;   // BASE's model files copied into OUT
  std::string config_path;           // BASE's config.json
  // Trainer tensors tied rules dropped, each with the one it must equal
  // (hfexport/tied.h CheckTied, before writing).
  std::vector<std::pair<gather::GatherTensor, gather::GatherTensor>> tied;
};

// Errors: ReadBase's; kCorrupt for a --hf-table file that does not parse
// (path, offset); kNotFound for one that cannot be read; kUnsupported
// (path: BASE's config.json) when no table fits BASE's model_type and the
// source; kUnsupported for unmapped tensors (without drop_unmapped);
// CheckAgainstBase's kCorrupt; ApplyTable's errors.
Result<HfExport> ExportHf(Env* env, gather::GatherPlan trainer, SourceKind kind, const HfOptions& options);

}  // namespace zerofold::hfexport

#endif  // ZEROFOLD_HFEXPORT_EXPORT_H_
