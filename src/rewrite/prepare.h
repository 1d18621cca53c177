// What a shrink does between reading the checkpoint model and writing the
// archive: select the subtree, check what cannot be rewritten, plan the
// output storages and their casts, point every view at its new storage and
// encode the new data.pkl. Pure: no I/O, so the file form (ShrinkFile) and
// the one-pass form (ShrinkStream) plan the same archive for the same model.
// Then, for the file forms, the copy of the planned storages.
#ifndef ZEROFOLD_REWRITE_PREPARE_H_
#define ZEROFOLD_REWRITE_PREPARE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "plan/shrink_plan.h"
#include "rewrite/cast.h"
#include "rewrite/shrink.h"
#include "torch/archive_writer.h"
#include "torch/checkpoint.h"
#include "torch/storage_source.h"
#include "zerofold/result.h"

namespace zerofold::rewrite {

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
// a legacy storage no tensor holds, or a cast the dtype rules refuse; SelectSubtree's, the planner's and the encoder's errors.
Result<PreparedShrink> PrepareShrink(torch::Checkpoint& ckpt, const std::string& input, const std::string& output,
                                     const ShrinkOptions& options);

// Writes `contents` into `sink`: each output storage of `plan` is copied
// from its input storage (of `storages`, read from `src` through a
// torch::StorageSources: deflated records inflated and CRC-checked; a
// big-endian archive's bytes as `bytes` says) and cast as `casts` says, reporting the storage bytes emitted through `wrote`. The
// one storage copier of ShrinkFile and convert's torch shards. Read errors
// carry src's name.
Status WriteShrunkArchive(const RandomSource& src, const std::vector<torch::Storage>& storages,
                          const plan::ShrinkPlan& plan, const std::vector<StorageCast>& casts,
                          const torch::ArchiveContents& contents, CastCopier& copier, Sink& sink,
                          const std::function<void(uint64_t)>& wrote, torch::StorageSources::Bytes bytes);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_PREPARE_H_
