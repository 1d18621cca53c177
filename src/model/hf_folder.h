// Hugging Face model folders: which checkpoint files a folder holds, and the
// sharded-checkpoint index (`*.index.json`: metadata.total_size and
// weight_map, tensor name -> shard file name).
//
// One rule for an index and its shards, applied by ResolveModelPath, which
// every command that reads a folder goes through (inspect, shrink, convert,
// diff and their C API calls): the index must list exactly the tensors its
// shards hold, each in the shard that holds it. Each way it can fail is
// kCorrupt (exit 1), naming the index, the tensor and the shard(s):
//   - weight_map names a tensor its shard does not hold (also: it is in
//     another shard);
//   - a shard holds a tensor weight_map does not list;
//   - a tensor is held by two shards (weight_map names one of them);
//   - weight_map lists a name twice (two JSON members of one key).
// Why refuse rather than pick: transformers takes the folder's names from
// the index and their values from the shards, and never compares the two.
// utils/hub.py get_checkpoint_shard_files makes
// sharded_metadata["all_checkpoint_keys"] = list(weight_map.keys()) and
// loads sorted(set(weight_map.values())); _load_pretrained_model counts
// missing keys against those names, then loads each shard's own state dict
// (a tensor the model expects is taken from whichever shard holds it), and
// initializes only the missing keys' modules, before that load.
// load_sharded_checkpoint(strict=True) checks the model against the
// index's names too, then loads every shard with load_state_dict(strict=
// False). So a name listed but not held is no missing key: neither loaded
// nor initialized; a name held but not listed is reported missing, then
// loaded; a name in two shards is loaded from the one read last (sorted
// order); and Python's json keeps the last of two members of one key. Each gives a model
// other than the index describes, silently; zerofold would carry the
// disagreement into its output (an index naming what the shards lack) or
// settle it by a choice transformers does not make. The check reads the
// shards' headers and pickles only (model::ListFile: no tensor bytes), with
// the caller's limits; a shard whose bytes do not list (corrupt,
// unsupported, unsafe, past a limit) is left to the reader that opens it
// next, which reports its own error, while a failed read or a stop ends
// the check with its error.
#ifndef ZEROFOLD_MODEL_HF_FOLDER_H_
#define ZEROFOLD_MODEL_HF_FOLDER_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/listing.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::model {

constexpr const char* kTorchIndexName = "pytorch_model.bin.index.json";
constexpr const char* kSafetensorsIndexName = "model.safetensors.index.json";
constexpr const char* kTorchSingleName = "pytorch_model.bin";
constexpr const char* kSafetensorsSingleName = "model.safetensors";

struct ShardIndex {
  std::string path;                                           // the index file
  uint64_t total_size = 0;                                    // metadata.total_size
  std::vector<std::pair<std::string, std::string>> metadata;  // other metadata members, as JSON text
  std::vector<std::pair<std::string, std::string>> weight_map;  // in file order
  // Shard file names in order of first appearance in weight_map.
  std::vector<std::string> Shards() const;
};

// Parses an index file. kCorrupt names the path and offset; a name
// weight_map lists twice is kCorrupt naming the name and both shards.
Result<ShardIndex> ReadShardIndex(Env* env, const std::string& path);

// The rule above for `index`, whose shards are in `folder`: OK when the
// names the shards hold (as listed with `options`) are exactly
// weight_map's, each in its shard; else kCorrupt with the index's path,
// or the error of a shard's read (kIO, kCancelled).
Status CheckShardIndex(Env* env, const ShardIndex& index, const std::string& folder, const ListOptions& options);

// The index as transformers writes it: 2-space indent, metadata first, then
// weight_map in the given order, trailing newline.
std::string FormatShardIndex(const ShardIndex& index);

struct ModelFiles {
  std::string folder;                 // "" when the path was a file
  std::vector<std::string> files;     // full paths of checkpoint files
  std::vector<ShardIndex> indexes;    // the index files found (0, 1 or 2)
};

// A file path gives itself. A folder gives the shards of its index files
// (pytorch_model.bin.index.json, model.safetensors.index.json) or its single
// files (pytorch_model.bin, model.safetensors). kNotFound when a folder has
// none, or an index names a shard that is missing; CheckShardIndex's
// kCorrupt for an index that does not match its shards (`options`: the
// limits its shards are listed with).
Result<ModelFiles> ResolveModelPath(Env* env, const std::string& path, const ListOptions& options);

// "a/b" + "c" with one slash.
std::string JoinPath(const std::string& folder, const std::string& name);

// The checkpoint files of a Hugging Face folder, as paths: the shards of
// its pytorch_model.bin.index.json, or its pytorch_model.bin, else the
// shards of its model.safetensors.index.json, or its model.safetensors.
// `handled` gets the names of the files used (index included). kNotFound
// when it has none; ResolveModelPath's errors.
Result<std::vector<std::string>> FolderCheckpoints(Env* env, const std::string& folder,
                                                   std::set<std::string>& handled, const ListOptions& options);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_HF_FOLDER_H_
