// --to safetensors: writing the tensors of checkpoints (torch, or safetensors
// read as model/checkpoint_file.h models them) as safetensors
// files, laid out as the reference writer lays them out
// (safetensors/writer.h), streaming every tensor through bounded buffers.
//
// What is written:
//   - every tensor under its checkpoint name (torch::Tensor::name), its
//     logical bytes in C order: non-contiguous views (transposes, slices,
//     expands) are written contiguous;
//   - with ConvertOptions::dtype, floating tensors cast (rewrite/cast.h), with
//     the NaN torch's `.to()` writes for the view's layout;
//   - names whose bytes overlap (tied weights) are all written, each as its
//     own copy, so nothing is missing on load; with dedupe_tied, a name whose
//     view is identical to an earlier name's (same storage, offset, shape,
//     stride, dtype) is dropped and recorded in __metadata__ under
//     kTiedMetadataKey as a JSON object {"dropped name": "kept name", ...}
//     (only the pairs whose kept name is in that file);
//   - __metadata__ holds {"format": "pt"} (transformers' convention), then
//     each plain non-tensor value of the checkpoint (model/plain_values.h) as
//     JSON text under its path; values that are not plain data, and values
//     whose path is a reserved key, are named in a warning instead.
// Layout: OUT is one file, or (ConvertOptions::folder) a folder with
// model.safetensors, or past max_shard_bytes model-0000K-of-0000N.safetensors
// shards (output/sharding.h: greedy, tie groups kept together) and
// model.safetensors.index.json. A Hugging Face folder as input (torch shards
// with pytorch_model.bin.index.json, or pytorch_model.bin) is converted as
// one model: its tensors are sharded afresh and, into a folder, its other
// files (config, tokenizer) are copied; OUT may also be one file. So is a folder of safetensors (model.safetensors.index.json
// and its shards, or model.safetensors), whose __metadata__ entries are
// carried into every output file.
#ifndef ZEROFOLD_REWRITE_TO_SAFETENSORS_H_
#define ZEROFOLD_REWRITE_TO_SAFETENSORS_H_

#include <string>

#include "model/checkpoint_file.h"
#include "rewrite/convert.h"

namespace zerofold::rewrite {

// __metadata__ key of the --dedupe-tied record (model/checkpoint_file.h).
constexpr const char* kTiedMetadataKey = model::kTiedMetadataKey;
// transformers' __metadata__ entry for torch weights.
constexpr const char* kFormatMetadataKey = "format";
constexpr const char* kFormatMetadataValue = "pt";

// Converts `input` (a torch file, or a folder as above) into `output`.
// Every file is planned (exact size) before any is written; each is written
// atomically; then a folder input's other files are copied, the index is
// written, and stale shards of an earlier save in OUT are removed. With
// options.part, a part writes only its files and finish only what comes
// after them (ConvertOptions::part). Errors carry the path and the record:
//   kUnsupported  a tensor whose dtype safetensors has no code for
//                 (complex128, quantized, float8 *fnuz), big-endian data;
//   kNotFound     a folder without checkpoints;
//   kInvalidArgument  a name that two input files both hold, --select with a
//                 folder input, a part with a file OUT, a part's file
//                 present with another size (without force);
//   kCorrupt      finish: a file missing or of another size;
// and the readers' and writers' errors. Unsafe globals are not refused (no
// code can reach a safetensors file): they are named in a warning.
Result<ConvertReport> ConvertToSafetensors(Env* env, const std::string& input, const std::string& output,
                                           const ConvertOptions& options);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_TO_SAFETENSORS_H_
