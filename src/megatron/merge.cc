#include "megatron/merge.h"

#include <map>
#include <utility>

#include "dcp/folder.h"
#include "megatron/nd_flat.h"
#include "megatron/unstack.h"
#include "model/hf_folder.h"

namespace zerofold::megatron {

namespace {

constexpr std::string_view kOptimizerPrefix = "optimizer.";

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

const char* OptimizerFormName(OptimizerForm form) {
  switch (form) {
    case OptimizerForm::kNone: return "none";
    case OptimizerForm::kModelSpace: return "model-space";
    case OptimizerForm::kNdFlattened: return "nd-flattened";
    case OptimizerForm::kDpReshardable: return "dp_reshardable";
  }
  return "?";
}

OptimizerForm FindOptimizerForm(const dcp::Metadata& md) {
  OptimizerForm form = OptimizerForm::kNone;
  for (const dcp::Entry& e : md.entries) {
    if (!e.is_tensor || !StartsWith(e.key, kOptimizerPrefix)) continue;
    if (StartsWith(e.key, kDpReshardablePrefix)) return OptimizerForm::kDpReshardable;
    form = OptimizerForm::kModelSpace;
  }
  for (const auto& [key, shape] : md.nd_reformulated)
    if (form == OptimizerForm::kModelSpace && StartsWith(key, kOptimizerPrefix)) return OptimizerForm::kNdFlattened;
  return form;
}

std::string CoreVersionHint(const dcp::Metadata& md) {
  if (md.mcore_metadata_root) return "0.15";
  if (md.has_mcore_data) return "<= 0.14";
  if (md.local_plans > 0 && md.local_plan_class == "SavePlan") return ">= 0.16";
  return "";
}

Result<PlannedMerge> PlanMegatronMerge(Env* env, const Folder& folder, const MergeOptions& options) {
  PlannedMerge m;
  const dcp::DcpFolder dcp_folder{folder.torch_dist, {}};
  ZF_ASSIGN_OR_RETURN(dcp::Metadata md,
                      dcp::LoadMetadata(env, dcp_folder, options.read.max_pickle_bytes, options.read.pickle));
  const std::string metadata_path = model::JoinPath(folder.torch_dist, dcp::kMetadataFile);
  m.core_version = CoreVersionHint(md);
  m.optimizer = FindOptimizerForm(md);
  Result<dcp::Selection> selection = dcp::SelectKeys(md, options.select);
  if (!selection.ok()) return Status(selection.status()).WithPath(folder.torch_dist);
  m.selection = std::move(selection).value();
  for (size_t i : m.selection.entries) {
    const std::string& key = md.entries[i].key;
    if (StartsWith(key, kDpReshardablePrefix))
      return Status::Unsupported(
                 "Megatron's distributed optimizer saved as dp_reshardable: per-bucket flat buffers that only the "
                 "model's bucket layout maps to params, which the checkpoint does not record (merge the weights, or "
                 "re-save with --dist-ckpt-optim-fully-reshardable)")
          .WithRecord(key)
          .WithPath(metadata_path);
  }

  dcp::PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(m.gather, dcp::PlanDcp(env, folder.torch_dist, md, m.selection, plan_options, &m.files));
  std::map<std::string, const std::vector<int64_t>*> original;
  for (const auto& [key, shape] : md.nd_reformulated) original.emplace(key, &shape);
  for (size_t k = 0; k < m.selection.entries.size(); ++k) {
    const std::string& key = md.entries[m.selection.entries[k]].key;
    auto found = original.find(key);
    if (found == original.end()) continue;
    Result<gather::GatherTensor> t = Unflatten(m.gather.tensors[k], *found->second);
    if (!t.ok()) return Status(t.status()).WithRecord(key).WithPath(metadata_path);
    m.gather.tensors[k] = std::move(t).value();
    ++m.nd_restored;
  }
  if (options.unstack) {
    ZF_ASSIGN_OR_RETURN(Unstacked u, Unstack(std::move(m.gather.tensors)));
    m.gather.tensors = std::move(u.tensors);
    m.unstacked_keys = u.split_keys;
  }
  m.input_files.push_back(metadata_path);
  for (const std::string& p : m.files.paths) m.input_files.push_back(p);
  std::vector<std::string> names;
  for (const gather::GatherTensor& t : m.gather.tensors) names.push_back(t.name);
  ZF_ASSIGN_OR_RETURN(m.layout, gather::LayOut(names, {}, {}, options.only));
  return m;
}

}  // namespace zerofold::megatron
