// zerofold merge of a PyTorch Distributed Checkpoint folder: read
// `.metadata` (dcp/metadata.h), select keys and plan each tensor's chunks
// (dcp/plan.h), lay out (gather/layout.h: .metadata order, --only), write
// (gather/output.h). Dtypes as saved unless --dtype.
#ifndef ZEROFOLD_OPS_MERGE_DCP_H_
#define ZEROFOLD_OPS_MERGE_DCP_H_

#include <string>

#include "dcp/folder.h"
#include "gather/output.h"
#include "ops/merge.h"
#include "zerofold/env.h"
#include "zerofold/status.h"

namespace zerofold::ops {

// Merges the DCP folder `folder` (.metadata or the safetensors form) into `out`; fills
// `report`. kInvalidArgument for ZeRO-only options (--tag,
// --exclude-frozen); errors of LoadMetadata, SelectKeys, PlanDcp, LayOut and
// WriteMerge.
Status MergeDcp(Env* env, const dcp::DcpFolder& folder, const std::string& out, const gather::OutputTarget& target,
                const MergeOptions& options, MergeReport* report);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_MERGE_DCP_H_
