#include "ops/merge_dcp.h"

#include <utility>
#include <vector>

#include "dcp/folder.h"
#include "dcp/plan.h"
#include "gather/layout.h"
#include "model/hf_folder.h"

namespace zerofold::ops {

Status MergeDcp(Env* env, const dcp::DcpFolder& dcp_folder, const std::string& out, const gather::OutputTarget& target,
                const MergeOptions& options, MergeReport* report) {
  const std::string& folder = dcp_folder.path;
  if (options.tag) return Status::InvalidArgument("--tag names a DeepSpeed tag folder; this is a DCP folder").WithPath(folder);
  if (options.exclude_frozen)
    return Status::InvalidArgument("--exclude-frozen needs DeepSpeed's records of frozen params; this is a DCP folder")
        .WithPath(folder);
  report->kind = CheckpointKind::kDcp;
  report->dcp_folder = folder;
  ZF_ASSIGN_OR_RETURN(dcp::Metadata md, dcp::LoadMetadata(env, dcp_folder, options.read.max_pickle_bytes, options.read.pickle));
  report->dcp_schema_2x = md.schema_2x;
  report->dcp_version = md.version;
  Result<dcp::Selection> selection = dcp::SelectKeys(md, options.select);
  if (!selection.ok()) return Status(selection.status()).WithPath(folder);
  report->selection = std::move(selection).value();

  dcp::PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.read = options.read;
  dcp::OpenFiles files;
  ZF_ASSIGN_OR_RETURN(report->gather, dcp::PlanDcp(env, folder, md, report->selection, plan_options, &files));
  if (dcp_folder.hf_shards.empty()) report->input_files.push_back(model::JoinPath(folder, dcp::kMetadataFile));
  for (const std::string& p : files.paths) report->input_files.push_back(p);
  ZF_ASSIGN_OR_RETURN(report->layout, gather::LayOut(report->selection.names, {}, {}, options.only));
  report->params = report->layout.entries.size();
  Status written = gather::WriteMerge(env, report->gather, report->layout, out, target, report->input_files, options,
                                     report);
  for (gather::SourceFile& f : report->gather.sources) f.source = nullptr;  // they close with `files`
  return written;
}

}  // namespace zerofold::ops
