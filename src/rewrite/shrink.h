// zerofold shrink: rewrite every tensor of a torch checkpoint into exactly
// sized storage (see plan/shrink_plan.h), streaming through a bounded buffer.
#ifndef ZEROFOLD_REWRITE_SHRINK_H_
#define ZEROFOLD_REWRITE_SHRINK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/read_plan.h"
#include "io/zstd_stream.h"
#include "model/listing.h"
#include "output/file_set.h"
#include "output/parts.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::rewrite {

struct ShrinkReport;

struct ShrinkOptions {
  torch::ReadOptions read;
  // Carry unsafe globals through unchanged (never executed) instead of
  // refusing the input with kUnsafe.
  bool keep_unsafe = false;
  // Plan and report sizes; write nothing.
  bool dry_run = false;
  // After writing, before the output replaces its target, read it back and
  // compare every tensor's xxh3-128 with the input's (verify/verify.h; with
  // `select`, the input's subtree). A mismatch is kCorrupt naming the
  // tensor, and the target (the input itself, in place) is left untouched.
  // kInvalidArgument with `dtype` (the tensors change) or a stream output
  // (it cannot be re-read).
  bool verify = false;
  // Bytes copied per read; memory is O(buffer_bytes + data.pkl).
  size_t buffer_bytes = size_t{4} << 20;
  // Cast floating tensors to this dtype (rewrite/cast.h); nullopt keeps dtypes.
  std::optional<torch::DType> dtype;
  // Write only the subtree at this key path (model/select.h); "" writes all.
  std::string select;
  // Write only the tensors whose names match one of these patterns, and
  // their ties (model/select.h KeepOnly); empty writes all. A file with no
  // match is kInvalidArgument; ShrinkFolder checks the folder's total
  // instead (only_none_ok, set by it for each shard).
  std::vector<std::string> only;
  bool only_none_ok = false;
  // A conversion (`zerofold convert`): always write a new torch archive with
  // every storage split exactly. Without it (and without dtype, select or only)
  // the rewrite never grows a file: see IsPlainShrink.
  bool convert = false;
  // Called at most once per buffer with where the run is: the file being
  // written (of a folder's) and the bytes written so far of the whole run's
  // total (output/file_set.h SetProgress).
  std::function<void(const output::SetProgress&)> progress;
  // ShrinkFolder: called as each shard's output is complete (committed, or
  // planned in a dry run), in order; `skipped`: a --part run found it
  // complete and left it. A later failure still removes what the run
  // wrote (ShrinkFolder).
  std::function<void(const ShrinkReport& report, bool skipped)> file_done;
  // Compression of ".zst" outputs and limits for ".zst" inputs.
  io::ZstdOptions zstd;
  // When set, ShrinkFile and ShrinkFolder append the tensor-data reads of
  // what they write, in the order they make them (io/read_plan.h), also on
  // a dry run; a copy unchanged reads the whole file. ShrinkStream ignores
  // it (a stream is read once, front to back).
  io::ReadPlan* read_plan = nullptr;
};

struct ShrinkReport {
  std::string input;
  std::string output;
  uint64_t input_file_bytes = 0;
  uint64_t output_file_bytes = 0;   // exact, also for dry runs
  uint64_t stored_before = 0;       // bytes in referenced input storages
  uint64_t stored_after = 0;        // bytes in output storages
  size_t tensors = 0;
  size_t storages_before = 0;
  size_t storages_after = 0;
  // "KEY: N bytes -> A + B + ..." for each storage split or trimmed.
  std::vector<std::string> changed_storages;
  // "KEY: kept whole: N B unreferenced, less than splitting costs" for each
  // storage with unreferenced bytes that splitting would not make smaller.
  std::vector<std::string> kept_whole;
  // A plain shrink whose rewrite would not be smaller than the input wrote
  // the input's bytes unchanged (in place: left the input untouched).
  bool copied_unchanged = false;
  std::vector<std::string> unsafe_globals;  // carried through (keep_unsafe)
  // Each tensor's name and logical bytes (numel x itemsize), in order.
  std::vector<std::pair<std::string, uint64_t>> tensor_nbytes;
  bool verified = false;         // verify ran and found every tensor equal
  size_t verified_tensors = 0;   // verify: tensors compared
  uint64_t verified_bytes = 0;   // verify: their logical bytes
};

// One torch file's shrink, planned from its metadata (nothing written) and
// ready to write through output::WriteFileSet: ShrinkFile writes one alone,
// ShrinkFolder and convert into a folder one per file. The callbacks of
// `file` own the opened input, and fill `report` as they run: the bytes
// written (output_file_bytes; a stream's uncompressed) and what verify
// compared. A plain shrink whose rewrite would not be smaller copies the
// input's bytes (copied_unchanged); in place it writes nothing (`file.write`
// null) and verify reads the input itself.
struct PlannedShrink {
  std::shared_ptr<ShrinkReport> report;  // as a dry run reports it, until written
  output::PlannedFile file;
};

// Plans the shrink of `input` into `output` as ShrinkFile does (the same
// checks and errors), opening `input` and reading its metadata only.
Result<PlannedShrink> PlanShrinkFile(Env* env, const std::string& input, const std::string& output,
                                     const ShrinkOptions& options);

// Shrinks the torch file `input` into `output` (a torch zip archive), which
// may be the same path: the output is written to a temp file in its folder
// and renamed over the target only when complete, so a failure at any point
// leaves the target as it was. `output` "-" is standard output and "X.zst"
// is compressed (io::OpenNamedOutput). Errors carry the path, record and
// offset.
Result<ShrinkReport> ShrinkFile(Env* env, const std::string& input, const std::string& output,
                                const ShrinkOptions& options);

// Shrinks in one forward pass (rewrite/stream.cc): `input` is read as
// io::OpenNamedInput opens it ("-" standard input, "X.zst" decompressed),
// `output` written as io::OpenNamedOutput opens it. For archives laid out as
// torch writes them (torch/stream_checkpoint.h) the output is byte for byte
// ShrinkFile's for the same input. kUnsupported, naming the record, for
// inputs a single pass cannot rewrite: a storage record before data.pkl, or
// storages in an order other than their output keys'. Offsets in .zst input
// count decompressed bytes, and messages say so. What reached standard
// output before an error stays written; a file output is left untouched.
Result<ShrinkReport> ShrinkStream(Env* env, const std::string& input, const std::string& output,
                                  const ShrinkOptions& options);

// ShrinkStream from a source to a sink (nullptr for a dry run). `output` is
// the output's name: the report's, and the top folder of legacy input's
// output (StemOf).
Result<ShrinkReport> ShrinkStreamTo(StreamSource* input, Sink* sink, const std::string& output,
                                    const ShrinkOptions& options);

// The archive top folder for an output path, as torch.save names it: its
// file name without the last extension ("pytorch_model" for
// "a/pytorch_model.bin", "model.v2" for "model.v2.pt"); "archive" (what
// torch.save names it for a file object) for "-", standard output, and
// when nothing is left.
std::string StemOf(const std::string& path);

}  // namespace zerofold::rewrite



namespace zerofold::rewrite {

struct FolderReport {
  std::vector<ShrinkReport> shards;
  std::vector<std::string> copied;   // other files copied (config, tokenizer, ...)
  std::string index;                 // index file written ("" when none)
  uint64_t total_size = 0;           // the index's metadata.total_size
  // With --part: every output shard, its part and what this run wrote
  // (output::SelectPartFiles); empty paths without --part.
  output::PartFiles parts;
};

// Shrinks a Hugging Face folder with pytorch_model.bin.index.json (and a
// pytorch_model.bin beside it, if any), or with a single pytorch_model.bin,
// into `output` (a folder, created if needed; may
// be `input`, the same string, for in-place; kInvalidArgument if an output
// file is an input file by another name, rewrite/convert.h RefuseInputTargets). Every shard is shrunk, one at a time, each
// replaced atomically; the index keeps its weight_map and gets total_size =
// the sum of the nbytes of every name in weight_map (tied names counted per
// name); every other regular file is copied (not for in-place).
// A folder without torch checkpoints but with model.safetensors.index.json
// (or model.safetensors) is converted (convert): each safetensors shard is
// written as the torch file transformers names alike
// ("model-00001-of-00002.safetensors" -> "pytorch_model-00001-of-00002.bin"),
// with pytorch_model.bin.index.json naming those files.
// The copies come before the index, so a folder with an index is complete.
// With `part` (output/parts.h), every shard is planned first (metadata only)
// and the output shards divided by their planned bytes (SelectPartFiles).
// kPart: only the part's shards, those present with their planned size
// skipped unless `force` (with verify, checked as written ones are), no
// index, nothing copied; kFinish: kCorrupt naming the first shard absent or
// of another size (OUT is not created), else the copies and the index.
Result<FolderReport> ShrinkFolder(Env* env, const std::string& input, const std::string& output,
                                  const ShrinkOptions& options, const output::PartSpec& part = {}, bool force = false);

// `inspect FOLDER`'s total for a Hugging Face folder whose checkpoint files
// are `files` (model::ResolveModelPath) and `listings` their listings, in
// that order (`listed` false when one failed: shrunk_file_bytes is then
// unset): sizes and bytes summed, and when the folder holds torch
// checkpoints, the sizes ShrinkFolder plans for it in place (a dry run,
// unsafe globals carried: nothing is read but metadata, nothing written);
// unset too when that plan fails or the folder holds only safetensors.
model::FolderTotal TotalOfFolder(Env* env, const std::string& folder, const std::vector<std::string>& files,
                                 const std::vector<model::Listing>& listings, bool listed,
                                 const torch::ReadOptions& read);

}  // namespace zerofold::rewrite
#endif  // ZEROFOLD_REWRITE_SHRINK_H_
