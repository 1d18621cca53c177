// Output other than one torch file per input file: safetensors
// (rewrite/to_safetensors.h) and a torch file split into Hugging Face shards
// (rewrite/torch_shards.h). What both share: options, the report, reading an
// input, and the transformers folder layout (index, stale shards).
#ifndef ZEROFOLD_REWRITE_CONVERT_H_
#define ZEROFOLD_REWRITE_CONVERT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/read_plan.h"
#include "io/zstd_stream.h"
#include "model/checkpoint_file.h"
#include "output/file_set.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::rewrite {

struct ConvertOptions {
  torch::ReadOptions read;
  // `zerofold convert`: torch output is always a new archive with every
  // storage exactly sized; shrink (false) copies a compact torch input
  // unchanged (rewrite/shrink.h ShrinkOptions::convert).
  bool convert = false;
  // Cast floating tensors to this dtype (rewrite/cast.h); nullopt keeps dtypes.
  std::optional<torch::DType> dtype;
  // Write only the subtree at this key path (model/select.h); "" writes all.
  std::string select;
  // Write only the tensors matching one of these patterns and their ties
  // (model/select.h KeepOnly); empty writes all. With several inputs (a
  // folder) a file may hold none; none in all of them is kInvalidArgument.
  std::vector<std::string> only;
  // OUT is a folder, written in transformers' layout: one file named
  // SingleFileName, or shards of at most max_shard_bytes of tensor data
  // (ShardFileName) and an index. Otherwise OUT is the one output file.
  bool folder = false;
  uint64_t max_shard_bytes = output::kDefaultMaxShardBytes;
  // safetensors: write each group of identical aliases once and record the
  // dropped names in __metadata__ (kTiedMetadataKey).
  bool dedupe_tied = false;
  // An input whose pickle has unsafe globals (pickle/safety.h) is kUnsafe
  // unless this is set; then a torch output carries them through (never
  // run) and a safetensors output holds only the tensors and plain values.
  bool keep_unsafe = false;
  // Plan and report sizes; write nothing.
  bool dry_run = false;
  // Read each file back before it replaces its target and compare every
  // tensor's dtype, shape and xxh3-128 with the input's (verify/verify.h;
  // torch shards also name order, stride and flags); a mismatch is kCorrupt
  // and leaves the target as it was. Files a part finds complete are read
  // and compared too. REQUIRES: no dtype, a file output (not '-', .zst).
  bool verify = false;
  // Compression of a ".zst" safetensors output file.
  io::ZstdOptions zstd;
  // Bytes per read and per gather buffer; memory is O(buffer_bytes + pickles).
  size_t buffer_bytes = size_t{4} << 20;
  // Called with tensor bytes written so far and the total.
  std::function<void(const output::SetProgress&)> progress;
  // When set, the tensor-data reads of the files this run writes are
  // appended in the order it makes them (io/read_plan.h), also on a dry run.
  io::ReadPlan* read_plan = nullptr;
  // --part (output/parts.h; folder output only, else kInvalidArgument): kPart
  // writes only its files (SelectPartFiles: those complete skipped, also
  // checked with verify), no index, nothing copied or removed; kFinish
  // checks every file and then writes what one run writes last (the index,
  // the copies, the removal of stale shards).
  output::PartSpec part;
  // Replace existing output files (output/target.h CheckTargets); with
  // kPart: rewrite the part's files even when complete.
  bool force = false;
};

struct OutputFile {
  std::string path;
  uint64_t bytes = 0;   // exact file size, also for dry runs
  size_t tensors = 0;   // names written into it
};

struct ConvertReport {
  std::vector<std::string> inputs;
  uint64_t input_bytes = 0;
  std::vector<OutputFile> files;
  std::string index;          // the index file written ("" when none)
  uint64_t total_size = 0;    // tensor bytes of every name written (the index's total_size)
  std::vector<std::string> copied;    // other files copied from an input folder
  std::vector<std::string> removed;   // stale shards of an earlier save removed from OUT
  std::vector<std::pair<std::string, std::string>> warnings;  // (path, message), for stderr
  size_t verified_tensors = 0;  // verify: tensors compared
  uint64_t verified_bytes = 0;  // verify: their logical bytes
  // With --part: every file of `files`, its part and what this run wrote
  // (output::SelectPartFiles); empty paths without --part.
  output::PartFiles parts;
};

// A checkpoint read for conversion, with its source kept open.
struct Input {
  std::string path;
  std::unique_ptr<RandomSource> src;
  torch::Checkpoint ckpt;
  // safetensors input: its __metadata__ (header order); else empty.
  std::vector<std::pair<std::string, std::string>> metadata;
  // safetensors input read with TorchlessTensors::kAsBytes: the tensors
  // torch has no reading of (F6_*, ...), by name; else empty.
  std::vector<model::TorchlessTensor> torchless;
};

// Opens and reads `path`, a torch or safetensors file
// (model/checkpoint_file.h), then applies options.select and options.only
// (model/select.h SelectTensors; `one_of_many`: a file of a folder, which
// may hold no tensor --only names). `torchless`: whether safetensors
// tensors torch cannot hold are refused (torch output) or read as bytes
// (safetensors output). Errors carry the path.
Result<Input> ReadInput(Env* env, const std::string& path, const ConvertOptions& options, bool one_of_many = false,
                        model::TorchlessTensors torchless = model::TorchlessTensors::kRefuse);

// Writes `set` through output::WriteFileSet with the options' protocol
// settings (part, force, zstd, progress, dry run, verify, buffer, read
// plan), then records in `report` the parts (with --part), the copies, the
// removals and the index (a folder's, unless a --part I/N ran).
Status WriteConvertFiles(Env* env, output::FileSet& set, const ConvertOptions& options, ConvertReport& report);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_CONVERT_H_
