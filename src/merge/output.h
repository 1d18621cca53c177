// Writing a merge (the merge job's output layout): from a gather plan and
// its layout to output files, handed to output::WriteFileSet. The
// same for every planner: where OUT goes (one file, or a folder with one
// file or Hugging Face shards and an index), the exact size of every file
// (also for dry runs), refusals (existing outputs without force, an output
// that is an input), streaming each tensor from its pieces through the
// assembler into a torch zip archive or a safetensors file, --verify, and
// committing.
//
// Every output file goes through an AtomicFileSink; all of them are
// committed only after the last one is complete (the index last), and when
// a commit fails the files committed before it are removed, so a failure
// leaves no new file behind. (Files replaced under `force` stay replaced.)
#ifndef ZEROFOLD_MERGE_OUTPUT_H_
#define ZEROFOLD_MERGE_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gather/layout.h"
#include "gather/plan.h"
#include "io/read_plan.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::merge {

using gather::GatherPlan;
using gather::MergeFormat;
using gather::MergeLayout;
using gather::MergeOutputFile;

struct OutputOptions {
  // Output format (--to). Unset: from OUT's extension (.safetensors), else torch.
  std::optional<MergeFormat> format;
  // A folder OUT is split into shards past this many tensor bytes per file
  // (--max-shard-size); unset: transformers' default, 5 GB. Set with a file
  // OUT: refused (ResolveOutput).
  std::optional<uint64_t> max_shard_bytes;
  // Replace existing output files (--force); without it they are refused,
  // as are the files of an earlier save in a folder OUT. With it, a folder
  // OUT's earlier save is replaced whole: its other shards are removed.
  bool force = false;
  // Plan only (--dry-run): the report is complete, nothing is written.
  bool dry_run = false;
  // After writing, before any output replaces its target, read every output
  // file back and compare each tensor's xxh3-128 with that of the same bytes
  // assembled anew from the sources. A difference leaves every target as
  // it was.
  bool verify = false;
  // Bytes per read; memory is O(buffer_bytes + metadata).
  size_t buffer_bytes = size_t{4} << 20;
  // Limits for reading the output back (verify).
  torch::ReadOptions read;
  // Called with tensor bytes written so far and the total, at most once
  // per buffer; phase is "merge" or "verify".
  std::function<void(const char* phase, uint64_t done, uint64_t total)> progress;
  // When set, the tensor-data reads of the files this run writes are
  // appended, in the order the writer makes them (io/read_plan.h), also on
  // a dry run, which reads none.
  io::ReadPlan* read_plan = nullptr;
  // --part (output/parts.h), folder OUT only. A part writes only the files
  // assigned to it, skips those already present with their planned size
  // (without force), and writes no index; kFinish checks every file is
  // present and complete, then writes the index. kAll: one run does all.
  output::PartSpec part;
};

// Where OUT goes: one file or a folder (output/target.h reads the name; the
// input is a folder), and in which format; and the files a folder OUT gets
// copied beside the weights.
struct OutputTarget {
  bool single_file = false;
  MergeFormat format = MergeFormat::kTorch;
  std::string copy_from;             // the folder the copies come from
  std::vector<std::string> copies;   // names (output/folder.h ModelFileNames)
};

// output/target.h ResolveTarget for a job that reads a folder and writes no
// streams: kInvalidArgument (path: out) for --to that contradicts OUT's
// name, a name of no format with an extension, '-' or X.zst, --max-shard-size
// or --part with a file OUT; also a torch file name without a stem.
Result<OutputTarget> ResolveOutput(Env* env, const std::string& out, const OutputOptions& options);

struct OutputReport {
  MergeFormat format = MergeFormat::kTorch;
  std::vector<MergeOutputFile> files;
  std::string index;                 // the index file written, "" when unsharded
  std::vector<std::string> removed;  // files of an earlier save removed from a folder OUT (force)
  std::vector<std::string> copied;   // the checkpoint folder's model files copied into a folder OUT
  uint64_t tensor_bytes = 0;  // data bytes written (a tie's copy counts in safetensors only)
  uint64_t bytes_read = 0;    // source bytes read to write them (not counting verify)
  size_t ties = 0;            // tie entries in the layout
  bool verified = false;
  size_t verified_tensors = 0;
  uint64_t verified_bytes = 0;
  // With --part: every file of `files`, its part and what this run wrote
  // (output::SelectPartFiles); empty paths without --part.
  output::PartFiles parts;
};

// Plans the files of `layout` (entries of `plan`) at `out` and, unless
// dry_run, writes and commits them; `inputs` are the files the plan reads
// (never overwritten, by any name). Fills `report` (also on dry runs).
// Errors carry the output path concerned: kUnsupported for a dtype the
// format or the conversion cannot take; kInvalidArgument for outputs that
// exist (without force) or are inputs; kCorrupt naming the file and tensor
// when verify finds a difference; errors of the assembler and the sinks.
Status WriteMerge(Env* env, const GatherPlan& plan, const MergeLayout& layout, const std::string& out,
                  const OutputTarget& target, const std::vector<std::string>& inputs, const OutputOptions& options,
                  OutputReport* report);

}  // namespace zerofold::merge

#endif  // ZEROFOLD_MERGE_OUTPUT_H_
