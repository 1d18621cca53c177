// --select KEYPATH: keep only a subtree of a checkpoint, which becomes the
// root of the output (torch output: the pickle root; safetensors: its
// tensors, named from the subtree's root).
//
// KEYPATH is keys separated by '/' ("module",
// "optimizer_state_dict/single_partition_of_fp32_groups/0"). At each level a
// key names, as tensor names do (torch/checkpoint.h PathElem):
//   dict or OrderedDict   the entry whose key is that str, or that int in
//                         decimal (a str key wins over an int key);
//   list, tuple           the item at that decimal index;
//   another object        "args", "kwargs", "state" (its reduce arguments,
//                         keyword arguments, BUILD state), or a decimal index
//                         or key of the items appended or set on it.
// A tensor has no keys.
#ifndef ZEROFOLD_MODEL_SELECT_H_
#define ZEROFOLD_MODEL_SELECT_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/result.h"

namespace zerofold::model {

// The keys of a KEYPATH; "" gives none. kInvalidArgument for an empty key
// ("a//b", "/a", "a/").
Result<std::vector<std::string>> SplitKeyPath(std::string_view keypath);

// Makes the node at `keypath` the root of ckpt: tensors are named again
// from it (only those under it remain), only the storages it reaches remain
// (DropUnreachableStorages). unsafe_globals stays the whole file's: torch.load
// of the file runs them whatever subtree is kept, so writing commands refuse
// the file without --keep-unsafe (issue 27). A keypath that reaches one tensor makes the root a dict
// {KEY: tensor} (KEY the path's last key), so the tensor keeps its name. An
// empty keypath changes nothing.
// Errors: kInvalidArgument when a key is missing, naming the level reached and
// listing its keys (at most 20, then how many more); kInvalidArgument for a
// malformed keypath; the recognizer's errors for the subtree.
Status SelectSubtree(torch::Checkpoint& ckpt, std::string_view keypath, const torch::ReadOptions& options);

// --only: keeps the tensors whose name (torch/checkpoint.h Tensor::name)
// matches one of `patterns` (model/glob.h), and their ties (tensors viewing
// the same bytes of the same storage the same way, as tied weights do). The
// root becomes a dict {name: tensor} of the kept tensors in the file's
// order: the structure around them and values that are no tensors are
// dropped (as a flat state dict has them, the names are unchanged). Then as
// SelectSubtree: storages and unsafe globals that the new root no longer
// reaches go. No patterns change nothing. kInvalidArgument when no tensor
// matches, naming the first few names, unless `none_ok` (of a folder's
// shards some may hold none; the folder checks its total).
Status KeepOnly(torch::Checkpoint& ckpt, std::span<const std::string> patterns, const torch::ReadOptions& options,
                bool none_ok);

// SelectSubtree(keypath), then KeepOnly(only): what --select and --only
// leave of a checkpoint.
Status SelectTensors(torch::Checkpoint& ckpt, std::string_view keypath, std::span<const std::string> only,
                     const torch::ReadOptions& options, bool none_ok = false);

// Removes the storages that no persistent id reachable from ckpt.root
// names (a writer would otherwise carry them), renumbering Tensor::storage.
// kInternal if a tensor's storage is among them.
Status DropUnreachableStorages(torch::Checkpoint& ckpt);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_SELECT_H_
