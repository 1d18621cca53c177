#include "ops/merge.h"

#include <utility>

#include "dcp/folder.h"
#include "ops/merge_dcp.h"
#include "ops/merge_load.h"
#include "ops/merge_zero.h"
#include "ops/zero_sources.h"

namespace zerofold::ops {

Result<MergeReport> MergeCheckpoint(Env* env, const std::string& ckpt_dir, const std::string& out,
                                    const MergeOptions& options) {
  MergeReport report;
  report.checkpoint = ckpt_dir;

  ZF_ASSIGN_OR_RETURN(gather::OutputTarget target, gather::ResolveOutput(env, out, options.format));
  if (std::optional<dcp::DcpFolder> dcp_folder = dcp::FindDcpFolder(env, ckpt_dir)) {
    ZF_TRY(MergeDcp(env, *dcp_folder, out, target, options, &report));
    return report;
  }
  if (dcp::HoldsDistcpFiles(env, ckpt_dir))
    return Status::Corrupt("holds .distcp files but no .metadata: not a complete Distributed Checkpoint").WithPath(ckpt_dir);
  if (options.select)
    return Status::InvalidArgument("--select picks keys of a DCP checkpoint; this is no DCP folder").WithPath(ckpt_dir);

  ZF_ASSIGN_OR_RETURN(std::string tag_folder, FindTagFolder(env, ckpt_dir, options.tag));
  ZF_ASSIGN_OR_RETURN(LoadedZero loaded, LoadZeroCheckpoint(env, tag_folder, options.read));
  ZF_TRY(LinkZero0(&loaded, /*by_value=*/true).status());
  report.tag_folder = loaded.tag_folder;
  report.tag = loaded.tag;
  report.warnings = loaded.warnings;
  for (const ZeroFile& f : loaded.model_files) report.input_files.push_back(f.path);
  for (const ZeroFile& f : loaded.optim_files) report.input_files.push_back(f.path);
  for (const ZeroFile& f : loaded.param_files) report.input_files.push_back(f.path);
  report.model_files = loaded.model_files.size();
  report.optim_files = loaded.optim_files.size();
  if (!loaded.description.model_states.empty()) report.ds_version = loaded.description.model_states[0].ds_version;

  zero::PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.exclude_frozen = options.exclude_frozen;
  Result<zero::MergePlan> planned = zero::PlanMerge(loaded.description, plan_options);
  // The planner names the file concerned; errors about the whole set of
  // files (a missing rank) get the tag folder.
  if (!planned.ok()) return Status(planned.status()).WithPath(tag_folder);
  report.plan = std::move(planned).value();
  ZF_ASSIGN_OR_RETURN(report.layout, LayOutMerge(report.plan, loaded.description, options.only));
  Result<gather::GatherPlan> gather = ToGatherPlan(report.plan, loaded);
  if (!gather.ok()) return gather.status();
  report.gather = std::move(gather).value();
  for (const OutputEntry& e : report.layout.entries) {
    if (e.tie) continue;
    switch (report.plan.tensors[e.tensor].kind) {
      case zero::TensorKind::kParam: ++report.params; break;
      case zero::TensorKind::kFrozenParam: ++report.frozen_params; break;
      case zero::TensorKind::kBuffer: ++report.buffers; break;
    }
  }
  ZF_TRY(gather::WriteMerge(env, report.gather, report.layout, out, target, report.input_files, options, &report));
  for (gather::SourceFile& f : report.gather.sources) f.source = nullptr;  // they close with `loaded`
  return report;
}

}  // namespace zerofold::ops
