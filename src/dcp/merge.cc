#include "dcp/merge.h"

#include <utility>

#include "model/hf_folder.h"

namespace zerofold::dcp {

Result<PlannedMerge> PlanDcpMerge(Env* env, const DcpFolder& dcp_folder, const MergeOptions& options) {
  const std::string& folder = dcp_folder.path;
  PlannedMerge m;
  ZF_ASSIGN_OR_RETURN(Metadata md, LoadMetadata(env, dcp_folder, options.read.max_pickle_bytes, options.read.pickle));
  m.schema_2x = md.schema_2x;
  m.version = md.version;
  Result<Selection> selection = SelectKeys(md, options.select);
  if (!selection.ok()) return Status(selection.status()).WithPath(folder);
  m.selection = std::move(selection).value();

  PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(m.gather, PlanDcp(env, folder, md, m.selection, plan_options, &m.files));
  if (dcp_folder.hf_shards.empty()) m.input_files.push_back(model::JoinPath(folder, kMetadataFile));
  for (const std::string& p : m.files.paths) m.input_files.push_back(p);
  ZF_ASSIGN_OR_RETURN(m.layout, gather::LayOut(m.selection.names, {}, {}, options.only));
  return m;
}

}  // namespace zerofold::dcp
