// The DeepSpeed ZeRO planner's output (zero/plan.h) as a gather plan
// (gather/plan.h): each slice of a rank file's storage becomes a piece of
// the flattened tensor, located through the loaded files' directories.
#ifndef ZEROFOLD_ZERO_GATHER_PLAN_H_
#define ZEROFOLD_ZERO_GATHER_PLAN_H_

#include <span>
#include <string>

#include "gather/layout.h"
#include "gather/plan.h"
#include "zero/description.h"
#include "zero/load.h"
#include "zero/plan.h"
#include "zerofold/result.h"

namespace zerofold::zero {

// Tensors in plan order (index i of both plans is the same tensor), grid
// {numel}; sources: the model-states files, then the optim-states files.
// Errors (path: the rank file; record: its storage record): kCorrupt for a
// slice naming a storage the file lacks or reaching past the storage's
// bytes (with the numbers).
Result<gather::GatherPlan> ToGatherPlan(const zero::MergePlan& plan, const LoadedZero& loaded);

// gather::LayOut in the order of the module state dict (`module` of the
// first model-states file).
Result<gather::MergeLayout> LayOutMerge(const zero::MergePlan& plan, const zero::ZeroCheckpoint& ckpt,
                                       std::span<const std::string> only);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_GATHER_PLAN_H_
