// Recognizing storages and tensor views in a decoded pickle graph, by what
// the nodes mean (torch/_utils.py rebuild functions, storage persistent ids),
// without running anything. Pure: no I/O, the graph is not modified.
#ifndef ZEROFOLD_TORCH_TENSOR_RECOGNIZER_H_
#define ZEROFOLD_TORCH_TENSOR_RECOGNIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pickle/graph.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// What one storage persistent id says:
// ('storage', torch.XStorage, key, location, numel) in zip archives, plus a
// sixth item, view metadata, in the legacy format.
struct StoragePid {
  std::string key;            // a str key as is; an int key in decimal
  std::optional<DType> dtype; // the class's dtype; nullopt for UntypedStorage
  bool untyped = false;       // torch.UntypedStorage: numel counts bytes
  uint64_t numel = 0;         // as declared: elements of the class (bytes if untyped)
  uint64_t nbytes = 0;        // numel x itemsize
  std::string location;       // "cpu", "cuda:0", ...
};

// Parses the persistent id of a kPersId node. Returns nullopt for a pid that
// names no storage (the legacy format's ('module', class, file, source)).
// kCorrupt for anything else torch's loader would refuse (not a tuple,
// unknown tag, wrong item count or types, a class that is no torch storage,
// negative numel, numel x itemsize overflowing); kUnsupported for legacy
// view metadata (storage views, torch < 0.4). REQUIRES: kind(node) == kPersId.
Result<std::optional<StoragePid>> ParseStoragePid(const pickle::Graph& graph, pickle::NodeId node, Format format);

struct RecognizeOptions {
  Format format = Format::kTorchZip;
  uint64_t max_graph_visits = 1ull << 22;  // see ReadOptions
  uint32_t max_path_depth = 10000;
};

// The options ReadCheckpoint passes for a file of this format.
RecognizeOptions RecognizeOptionsFor(Format format, const ReadOptions& options);

struct Recognized {
  // Every storage any pid in the graph names, in order of its first pid node
  // (document order), reachable from the root or not, since torch's loader
  // reads every storage its pickle mentions. record/data_offset/record_size
  // are left for the container to fill.
  std::vector<Storage> storages;
  // Tensors reached from the root, depth first in document order, one per
  // path; their storage indexes `storages`.
  std::vector<Tensor> tensors;
};

// Recognizes tensors (REDUCE of torch._utils._rebuild_tensor, _v2, _v3,
// _rebuild_qtensor, _rebuild_parameter, _rebuild_parameter_with_state,
// torch._tensor._rebuild_from_type_v2) whose first argument is a storage pid,
// and names each path to one. Paths go through dict keys, list/tuple/set
// indices, collections.OrderedDict items and, for other objects, their
// reduce arguments (".args"), keyword arguments (".kwargs"), appended items,
// set items and BUILD state (".state"). Tensors inside a tensor's own state
// (a subclass's or parameter's ".state", a per-channel quantizer's ".args")
// are named below it. Cycles are cut where a path would revisit a node.
// Errors: kCorrupt for a malformed pid or rebuild call (record: the tensor
// name, when reached) or a storage key declared inconsistently; kLimit for
// max_graph_visits / max_path_depth.
Result<Recognized> RecognizeTensors(const pickle::Graph& graph, pickle::NodeId root,
                                    const RecognizeOptions& options = {});

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_TENSOR_RECOGNIZER_H_
