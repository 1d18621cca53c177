// The rules of an output folder that every job writing one shares (merge,
// shrink and convert of a folder, --part finish): the index transformers
// reads, the names of an earlier save and their removal, the refusal of a
// target that is an input, and the other files (config, tokenizer) copied
// beside the weights. Shard names and plans: output/sharding.h; parts:
// output/parts.h.
#ifndef ZEROFOLD_OUTPUT_FOLDER_H_
#define ZEROFOLD_OUTPUT_FOLDER_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "output/sharding.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::output {

// Writes transformers' index (`json.dumps(index, indent=2, sort_keys=True)`:
// metadata.total_size, then weight_map sorted by name) to `path`.
Status WriteIndex(Env* env, const std::string& path, uint64_t total_size,
                  std::vector<std::pair<std::string, std::string>> weight_map);

// True for the names a save of `format` writes: SingleFileName,
// IndexFileName, and ShardFileName's pattern (5 or more digits each).
bool IsSavedWeightsName(const std::string& name, ShardFormat format);

// Removes files of `folder` that an earlier save of `format` left and the
// new output does not overwrite: the single file, shards named like
// ShardFileName and the index, except the names in `keep`. Returns the
// names removed. Like transformers' save_pretrained, so a folder never
// mixes two saves.
Result<std::vector<std::string>> RemoveStaleShards(Env* env, const std::string& folder, ShardFormat format,
                                                   const std::set<std::string>& keep);

// The files of an earlier save of `format` in `folder` (IsSavedWeightsName),
// as paths in name order: what an output into the folder replaces or
// removes. Empty when `folder` is no folder.
Result<std::vector<std::string>> EarlierSave(Env* env, const std::string& folder, ShardFormat format);

// kInvalidArgument, with the target's path, if one of `targets` (files an
// output writes or removes) names the same file as one of `inputs`
// (SameFile: also through "./", an absolute path, a symlink or a hard link),
// which the output would destroy. The message is `what`, then ": INPUT"
// when the input is spelled otherwise. Targets that do not exist are fine.
Status RefuseInputTargets(Env* env, const std::vector<std::string>& inputs, const std::vector<std::string>& targets,
                          const std::string& what);

// The files of folder `input` other than `handled` names and hidden ones
// (config, tokenizer: what a folder output copies as they are), by name.
Result<std::vector<std::string>> OtherFileNames(Env* env, const std::string& input,
                                                const std::set<std::string>& handled);
// Copies a file to `to` atomically (temp file, fsync, rename), through a
// buffer of at most buffer_bytes.
Status CopyFile(Env* env, const std::string& from, const std::string& to, size_t buffer_bytes);
// Writes `text` to `path` atomically.
Status WriteSmallFile(Env* env, const std::string& path, const std::string& text);

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_FOLDER_H_
