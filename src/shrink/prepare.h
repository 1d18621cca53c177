// What a shrink does between reading the checkpoint model and writing the
// archive: select the subtree, check what cannot be rewritten, plan the
// output storages and their casts, point every view at its new storage and
// encode the new data.pkl. Pure: no I/O, so the file form (ShrinkFile) and
// the one-pass form (ShrinkStream) plan the same archive for the same model.
#ifndef ZEROFOLD_SHRINK_PREPARE_H_
#define ZEROFOLD_SHRINK_PREPARE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "plan/shrink_plan.h"
#include "shrink/cast.h"
#include "shrink/shrink.h"
#include "torch/archive_writer.h"
#include "torch/checkpoint.h"
#include "zerofold/result.h"

namespace zerofold::shrink {

struct PreparedShrink {
  // Every field but input_file_bytes and output_file_bytes (the caller's).
  ShrinkReport report;
  plan::ShrinkPlan plan;
  std::vector<StorageCast> casts;             // parallel to plan.storages
  std::vector<torch::StorageRecord> records;  // parallel to plan.storages, sizes after casts
  std::vector<std::byte> data_pkl;            // the patched graph, encoded
  std::string top_folder;                     // the input's, or StemOf(output) for legacy input
};

// A shrink that neither converts, casts nor selects: its output is never larger than
// its input (see ShrinkReport::copied_unchanged).
bool IsPlainShrink(const ShrinkOptions& options);

// Prepares the shrink of `ckpt` into `output` (named for the report and the
// legacy top folder). Changes ckpt: SelectSubtree (storages renumbered) and
// the retargeted graph. Errors carry no path (the caller adds it):
// kUnsafe for unsafe globals without keep_unsafe, kUnsupported for
// big-endian data, a legacy storage no tensor holds, or a cast the dtype
// rules refuse; SelectSubtree's, the planner's and the encoder's errors.
Result<PreparedShrink> PrepareShrink(torch::Checkpoint& ckpt, const std::string& input, const std::string& output,
                                     const ShrinkOptions& options);

}  // namespace zerofold::shrink

#endif  // ZEROFOLD_SHRINK_PREPARE_H_
