// A whole shrink request, as `zerofold shrink IN OUT [flags]` and zf_shrink
// make it: the refusals of requests that cannot run, and the choice of
// operation (ShrinkFile, ShrinkStream, ShrinkFolder, ConvertToSafetensors,
// ShardTorchFile). Both front ends call these, so they refuse and route
// alike; only the words naming the options differ (RequestWords).
#ifndef ZEROFOLD_REWRITE_REQUEST_H_
#define ZEROFOLD_REWRITE_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rewrite/convert.h"
#include "rewrite/dequantize.h"
#include "output/parts.h"
#include "output/target.h"
#include "rewrite/shrink.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::rewrite {

struct ShrinkRequest {
  // `zerofold convert`: safetensors input is accepted (shrink refuses it:
  // its tensors are exactly sized already).
  bool convert = false;
  std::string in;
  std::string out;   // in place: the same as `in`
  bool in_place = false;
  bool force = false;  // replace existing outputs (output/target.h CheckTargets)
  // --to: the output format; unset: OUT's name says it (output/target.h),
  // else torch for shrink, and convert refuses.
  std::optional<output::ShardFormat> to;
  // Set: write shards of at most this many bytes into the folder OUT.
  std::optional<uint64_t> max_shard_bytes;
  bool dedupe_tied = false;  // safetensors only
  // Parts of a folder OUT (output/parts.h): a folder IN shrunk (or converted
  // to torch) by ShrinkFolder, a file IN sharded by ShardTorchFile, or any
  // IN converted by ConvertToSafetensors; not with in_place.
  output::PartSpec part;
  ShrinkOptions options;     // verify, dry_run, dtype, select, progress, ...
  // convert --dequantize: decode IN's quantized weights into this dtype
  // (rewrite/dequantize.h); no streams, no in place, --dtype, --select,
  // --only or --dedupe-tied.
  std::optional<quant::Target> dequantize;
};

// How a front end names the request's options in refusals.
struct RequestWords {
  const char* set;  // the verb: "use" a flag, "set" an option
  const char* to;   // names the output format
  const char* verify;
  const char* dry_run;
  const char* in_place;
  const char* force;
  const char* dtype;
  const char* select;
  const char* only;
  const char* to_safetensors;
  const char* max_shard_size;
  const char* dedupe_tied;
  const char* part;
  const char* choose_format;  // how to name the format when OUT's name does not
};
inline constexpr RequestWords kFlagWords = {"use",      "--to",     "--verify", "--dry-run",          "--in-place",
                                            "--force",  "--dtype",  "--select", "--only", "--to safetensors",
                                            "--max-shard-size", "--dedupe-tied", "--part",
                                            "add --to torch or --to safetensors"};
inline constexpr RequestWords kOptionWords = {"set",   "the format", "verify", "dry_run",        "in_place", "force",
                                              "dtype", "select", "only", "to_safetensors", "max_shard_size", "dedupe_tied", "part",
                                              "set to_safetensors (0: torch, 1: safetensors)"};

// How the request reads OUT (output/target.h ResolveTarget): a file, a
// folder or standard output, and the format written. kInvalidArgument for
// the names and flags that policy refuses.
Result<output::Target> ResolveRequestTarget(Env* env, const ShrinkRequest& request, const RequestWords& words);

// True when `in` holds safetensors checkpoints only: a file that sniffs as
// safetensors, or a folder with model.safetensors.index.json or
// model.safetensors and neither pytorch_model.bin.index.json nor
// pytorch_model.bin. False for streams and missing paths (the operation
// reports those). Errors of reading the file.
Result<bool> IsSafetensorsInput(Env* env, const std::string& in);

// The request's refusals, in order: kInvalidArgument with a message naming
// the options in `words`. Errors of looking at the files (a folder that
// cannot be searched) come back as they are.
Status CheckShrinkRequest(Env* env, const ShrinkRequest& request, const RequestWords& words);

// What a request wrote: one report per torch output file, or, for
// safetensors and torch shards, the conversion's report.
struct ShrinkOutcome {
  std::vector<ShrinkReport> files;
  std::optional<ConvertReport> converted;
  // --dequantize: what it found (its files are in `converted`).
  std::optional<DequantizeReport> dequantized;
  // A folder's (ShrinkFolder's; a conversion's are in `converted`): the
  // index written ("" when none), and with --part every output file, its
  // part and what this run wrote.
  std::string index;
  output::PartFiles parts;
};

// Carries the request out. REQUIRES: CheckShrinkRequest returned OK (the
// front ends call it first, to tell refusals from failures).
Result<ShrinkOutcome> RunShrink(Env* env, const ShrinkRequest& request);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_REQUEST_H_
