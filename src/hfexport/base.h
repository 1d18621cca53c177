// BASE for `merge --hf`: the Hugging Face folder training started from.
// Its config.json (model_type, architectures and the numbers the family
// tables' ops take) and the names, dtypes and shapes of its weights, read
// from the index and the shards' headers or pickles (model/hf_folder.h
// FolderCheckpoints: the index must match its shards), never their bytes.
// The export is checked against them both ways before a byte is written.
#ifndef ZEROFOLD_HFEXPORT_BASE_H_
#define ZEROFOLD_HFEXPORT_BASE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "json/value.h"
#include "model/listing.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::hfexport {

struct BaseTensor {
  std::string name;
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
};

struct BaseModel {
  std::string folder;
  std::string config_path;
  json::Value config;
  std::string model_type;
  std::vector<std::string> architectures;
  std::vector<BaseTensor> tensors;  // in the files' order
};

// Reads BASE. Errors (path: the file): kNotFound for a folder without
// config.json or without weights; kCorrupt for a config.json that is no
// JSON object or has no string model_type; those of FolderCheckpoints and
// model::ListFile; kUnsupported for a dtype torch has no name for.
Result<BaseModel> ReadBase(Env* env, const std::string& folder, const model::ListOptions& options);

// "a, b, c and 4 more": the first `few` names and how many follow.
std::string FewNames(const std::vector<std::string>& names, size_t few = 5);

// Checks the export's tensors and ties (a tie has its owner's shape)
// against BASE's both ways: every BASE name
// exported, no name BASE lacks, each shape BASE's. kCorrupt (path:
// BASE) naming the names missing from the export, those extra to BASE and
// those whose shapes differ (with both shapes), each list as FewNames.
Status CheckAgainstBase(const BaseModel& base, const gather::GatherPlan& plan);

}  // namespace zerofold::hfexport

#endif  // ZEROFOLD_HFEXPORT_BASE_H_
