// The safetensors form of a Distributed Checkpoint (torch 2.8+
// HuggingFaceStorageWriter, torch/distributed/checkpoint/hf_storage.py and
// _hf_utils.py): no .metadata; files `shard-NNNNN-model-NNNNN-of-NNNNN.safetensors`,
// each holding its rank's chunks under their keys, with
// `__metadata__["DCP_SHARDING_INFO"]` = JSON {fqn: {"saved_offsets": [..]}}.
// As torch's reader does, a key's global shape is the largest
// offset + size over its chunks per dim, and a key without sharding info is
// one chunk at offset 0.
//
// Read into the same Metadata as `.metadata` gives: each chunk's
// StorageItem is `raw` (the tensor's contiguous bytes in the file).
#ifndef ZEROFOLD_DCP_HF_FORM_H_
#define ZEROFOLD_DCP_HF_FORM_H_

#include <string>
#include <vector>

#include "dcp/metadata.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

// True if `name` is a shard name of the safetensors form.
bool IsHfShardName(std::string_view name);

// The shard files of `dir` (sorted names), empty when none.
std::vector<std::string> HfShardFiles(Env* env, const std::string& dir);

// Reads the headers of `files` (names in `folder`). Keys in first-seen order
// over the files. Errors (path: the shard file; record: the key, or
// "header"): those of safetensors::ReadHeader; kCorrupt for
// DCP_SHARDING_INFO that is no JSON object of {"saved_offsets": [ints]},
// offsets of another rank than the tensor's shape, a key whose chunks
// disagree on dtype or rank; kUnsupported for a dtype torch has no name for.
Result<Metadata> ReadHfForm(Env* env, const std::string& folder, const std::vector<std::string>& files);

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_HF_FORM_H_
