// Hugging Face model folders: which checkpoint files a folder holds, and the
// sharded-checkpoint index (`*.index.json`: metadata.total_size and
// weight_map, tensor name -> shard file name).
#ifndef ZEROFOLD_MODEL_HF_FOLDER_H_
#define ZEROFOLD_MODEL_HF_FOLDER_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// Parses an index file. kCorrupt names the path and offset.
Result<ShardIndex> ReadShardIndex(Env* env, const std::string& path);

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
// none, or an index names a shard that is missing.
Result<ModelFiles> ResolveModelPath(Env* env, const std::string& path);

// "a/b" + "c" with one slash.
std::string JoinPath(const std::string& folder, const std::string& name);

// The checkpoint files of a Hugging Face folder, as paths: the shards of
// its pytorch_model.bin.index.json, or its pytorch_model.bin, else the
// shards of its model.safetensors.index.json, or its model.safetensors.
// `handled` gets the names of the files used (index included). kNotFound
// when it has none; ResolveModelPath's errors.
Result<std::vector<std::string>> FolderCheckpoints(Env* env, const std::string& folder,
                                                   std::set<std::string>& handled);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_HF_FOLDER_H_
