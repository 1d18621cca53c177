#include "zero/merge.h"

#include <utility>

#include "zero/gather_plan.h"

namespace zerofold::zero {

Result<PlannedMerge> PlanZeroMerge(Env* env, const std::string& ckpt_dir, const MergeOptions& options) {
  PlannedMerge m;
  ZF_ASSIGN_OR_RETURN(std::string tag_folder, FindTagFolder(env, ckpt_dir, options.tag));
  ZF_ASSIGN_OR_RETURN(m.loaded, LoadZeroCheckpoint(env, tag_folder, options.read));
  ZF_TRY(LinkZero0(&m.loaded, /*by_value=*/true).status());
  for (const ZeroFile& f : m.loaded.model_files) m.input_files.push_back(f.path);
  for (const ZeroFile& f : m.loaded.optim_files) m.input_files.push_back(f.path);
  for (const ZeroFile& f : m.loaded.param_files) m.input_files.push_back(f.path);

  PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.exclude_frozen = options.exclude_frozen;
  Result<MergePlan> planned = PlanMerge(m.loaded.description, plan_options);
  // The planner names the file concerned; errors about the whole set of
  // files (a missing rank) get the tag folder.
  if (!planned.ok()) return Status(planned.status()).WithPath(tag_folder);
  m.plan = std::move(planned).value();
  ZF_ASSIGN_OR_RETURN(m.layout, LayOutMerge(m.plan, m.loaded.description, options.only));
  ZF_ASSIGN_OR_RETURN(m.gather, ToGatherPlan(m.plan, m.loaded));
  for (const gather::OutputEntry& e : m.layout.entries) {
    if (e.tie) continue;
    switch (m.plan.tensors[e.tensor].kind) {
      case TensorKind::kParam: ++m.params; break;
      case TensorKind::kFrozenParam: ++m.frozen_params; break;
      case TensorKind::kBuffer: ++m.buffers; break;
    }
  }
  return m;
}

}  // namespace zerofold::zero
