#include "zero/inspect.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "gather/plan.h"
#include "zero/load.h"
#include "zero/plan.h"

namespace zerofold::zero {

namespace {

constexpr std::string_view kStatesSuffix = "_states.pt";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void AddDtype(std::vector<std::string>* v, torch::DType d) {
  std::string name(torch::Info(d).name);
  if (std::find(v->begin(), v->end(), name) == v->end()) v->push_back(name);
}

// Sorts a file's storages into masters, module copy and the rest.
void CountBytes(const ZeroFile& f, const std::unordered_set<std::string>& masters,
                const std::unordered_set<std::string>& module, ZeroInspection* out) {
  for (const auto& [key, loc] : f.storages) {
    if (masters.count(key)) {
      out->master_bytes += loc.nbytes;
    } else if (module.count(key)) {
      out->module_bytes += loc.nbytes;
    } else {
      out->optimizer_state_bytes += loc.nbytes;
    }
  }
}

std::string OptimizerName(const zero::ZeroCheckpoint& d) {
  if (d.universal) return "universal (" + std::to_string(d.universal_params.size()) + " fp32.pt files)";
  if (d.optim_states.empty()) {
    return d.model_states.empty() ? "none" : std::string(zero::Zero0OptimizerName(d.model_states[0].optimizer_kind));
  }
  const zero::OptimStates& o = d.optim_states[0];
  if (!o.zero_stage) return "BF16_Optimizer";
  return *o.zero_stage == 3 ? "DeepSpeedZeroOptimizer_Stage3" : "DeepSpeedZeroOptimizer";
}

}  // namespace

bool IsDeepSpeedFolder(Env* env, const std::string& dir) {
  if (!env->IsDirectory(dir)) return false;
  Result<std::vector<DirEntry>> entries = env->ListDir(dir);
  if (!entries.ok()) return false;
  for (const DirEntry& e : *entries) {
    if (!e.is_dir && (e.name == kLatestFile || e.name == kLatestUniversalFile || EndsWith(e.name, kStatesSuffix)))
      return true;
  }
  for (const DirEntry& e : *entries) {
    if (!e.is_dir) continue;
    Result<std::vector<DirEntry>> sub = env->ListDir(dir + "/" + e.name);
    if (!sub.ok()) continue;
    for (const DirEntry& s : *sub)
      if (!s.is_dir && EndsWith(s.name, kStatesSuffix)) return true;
  }
  return false;
}

Result<ZeroInspection> InspectZeroCheckpoint(Env* env, const std::string& ckpt_dir, const torch::ReadOptions& read) {
  ZeroInspection out;
  out.checkpoint = ckpt_dir;
  ZF_ASSIGN_OR_RETURN(out.tag_folder, FindTagFolder(env, ckpt_dir, std::nullopt));
  ZF_ASSIGN_OR_RETURN(LoadedZero loaded, LoadZeroCheckpoint(env, out.tag_folder, read));
  out.tag = loaded.tag;
  out.warnings = loaded.warnings;
  Result<std::vector<std::string>> open = LinkZero0(&loaded, /*by_value=*/false);
  if (open.ok()) out.linked_by_value = *open;
  const zero::ZeroCheckpoint& d = loaded.description;
  out.optimizer = OptimizerName(d);
  out.layout = d.universal ? "universal" : d.optim_states.empty() ? "zero-0" : "zero";
  if (!d.model_states.empty()) out.ds_version = d.model_states[0].ds_version;

  // Bytes by role, per file.
  for (size_t i = 0; i < loaded.model_files.size(); ++i) {
    const zero::ModelStates& m = d.model_states[i];
    std::unordered_set<std::string> masters, module;
    for (const auto& g : m.optimizer_fp32_groups)
      for (const zero::TensorMeta& t : g) {
        masters.insert(t.storage);
        AddDtype(&out.master_dtypes, t.dtype);
      }
    for (const zero::NamedTensor& t : m.module) {
      module.insert(t.tensor.storage);
      if (i == 0 && torch::Info(t.tensor.dtype).is_floating) AddDtype(&out.module_dtypes, t.tensor.dtype);
    }
    if (m.frozen_param_fragments)
      for (const zero::NamedTensor& t : *m.frozen_param_fragments) module.insert(t.tensor.storage);
    CountBytes(loaded.model_files[i], masters, module, &out);
    out.files.push_back(ZeroFileInfo{loaded.model_files[i].path, "model states", loaded.model_files[i].source->size()});
  }
  for (size_t r = 0; r < loaded.optim_files.size(); ++r) {
    std::unordered_set<std::string> masters;
    const zero::OptimStates& o = d.optim_states[r];
    for (size_t g = 0; g < o.fp32_groups.size(); ++g) {
      AddDtype(&out.master_dtypes, o.fp32_groups[g].dtype);
      // An NVMe-offloaded group's tensor describes its swap file (below).
      if (g >= o.offloaded_file.size() || o.offloaded_file[g] < 0) masters.insert(o.fp32_groups[g].storage);
    }
    CountBytes(loaded.optim_files[r], masters, {}, &out);
    out.files.push_back(ZeroFileInfo{loaded.optim_files[r].path, "optim states", loaded.optim_files[r].source->size()});
  }
  // Universal zero/<name>/fp32.pt files, or NVMe swap files of offloaded
  // partitions: masters all.
  for (size_t i = 0; i < loaded.param_files.size(); ++i) {
    for (const auto& [key, loc] : loaded.param_files[i].storages) out.master_bytes += loc.nbytes;
    if (d.universal) AddDtype(&out.master_dtypes, d.universal_params[i].tensor.dtype);
    out.files.push_back(ZeroFileInfo{loaded.param_files[i].path, d.universal ? "universal fp32" : "nvme partition",
                                      loaded.param_files[i].source->size()});
  }

  Result<zero::MergePlan> plan = open.ok() ? zero::PlanMerge(d) : Result<zero::MergePlan>(open.status());
  if (plan.ok() && out.linked_by_value.empty()) {
    out.mergeable = true;
    out.stage = plan->zero_stage;
    out.world_size = plan->world_size;
    for (const zero::OutputTensor& t : plan->tensors) {
      switch (t.kind) {
        case zero::TensorKind::kParam: ++out.params; break;
        case zero::TensorKind::kFrozenParam: ++out.frozen_params; break;
        case zero::TensorKind::kBuffer: ++out.buffers; break;
      }
      out.merge_bytes += gather::NumelOf(t.shape) * torch::Info(t.dtype).itemsize;
    }
    out.ties = plan->ties.size();
    out.merge_tensors = plan->tensors.size() + plan->ties.size();
  } else {
    // Counts as recorded.
    if (!plan.ok()) {
      out.refusal = plan.status();
      if (out.refusal.path().empty()) out.refusal.WithPath(out.tag_folder);
    }
    out.mergeable = plan.ok();  // ZeRO-0 masters left to link by value: merge decides
    if (plan.ok()) {
      out.stage = plan->zero_stage;
      out.world_size = plan->world_size;
    } else {
      out.world_size = static_cast<uint32_t>(d.optim_states.size());
      if (!d.optim_states.empty() && d.optim_states[0].zero_stage) out.stage = static_cast<int>(*d.optim_states[0].zero_stage);
      else if (!d.optim_states.empty()) out.stage = 1;
    }
    if (!d.model_states.empty()) {
      const zero::ModelStates& m = d.model_states[0];
      for (const auto& g : m.param_shapes) out.params += g.size();
      if (!m.param_shapes_recorded)
        for (const auto& g : m.optimizer_fp32_groups) out.params += m.optimizer_kind == zero::Zero0Optimizer::kFp16Unfused ? g.size() : 0;
      out.buffers = m.buffer_names.size();
      if (m.frozen_param_shapes) out.frozen_params = m.frozen_param_shapes->size();
      if (m.shared_params) out.ties = m.shared_params->size();
    }
  }
  return out;
}

}  // namespace zerofold::zero
