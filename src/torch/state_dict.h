// The data.pkl of a state dict of fresh, contiguous tensors, byte for byte
// as torch 1.13's torch.save writes an OrderedDict of them:
//   OrderedDict() with SETITEMS name -> _rebuild_tensor_v2(
//       pid ('storage', torch.<Dtype>Storage, key, 'cpu', numel),
//       0, size, stride, False, OrderedDict())
// and, for a dtype without a legacy storage class (uint16/32/64, float8,
// float4_e2m1fn_x2, complex32, bits: torch.storage._new_dtypes()), as torch
// >= 2.1 writes it (torch 2.6 _tensor.py _reduce_ex_internal; torch 1.13
// cannot load it):
//   _rebuild_tensor_v3(pid ('storage', torch.storage.UntypedStorage, key,
//       'cpu', nbytes), 0, size, stride, False, OrderedDict(), torch.<dtype>)
// One storage per data-holding tensor, keyed "0", "1", ... in order of first
// reference (torch.save's id_map); a tensor that shares another's data
// (a tie, as model.state_dict() gives for tied weights) is a second rebuild
// call naming the same key. Strides are contiguous as torch computes them
// (a size-0 dim counts as 1). Objects that CPython's pickler writes once and
// fetches from the memo afterwards (the globals, 'storage', 'cpu', a shared
// key) are single nodes here, so the encoder writes the same BINGETs.
#ifndef ZEROFOLD_TORCH_STATE_DICT_H_
#define ZEROFOLD_TORCH_STATE_DICT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pickle/graph.h"
#include "torch/archive_writer.h"
#include "torch/dtype.h"
#include "zerofold/result.h"

namespace zerofold::torch {

struct StateDictEntry {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  // Index of the entry whose storage this one uses: its own index, or an
  // earlier entry's (same dtype and shape) for a tie.
  size_t data = 0;
};

struct StateDictPickle {
  std::vector<std::byte> data_pkl;
  std::vector<StorageRecord> storages;  // in key order of assignment: "0", "1", ...
  std::vector<size_t> storage_entry;           // per storage: the entry holding its data
};

// The state dict as a graph, before it is encoded: what EncodeStateDict
// encodes, with the nodes of each entry's tensor, so a checkpoint model
// (torch/checkpoint.h) can be built around it.
struct StateDictGraph {
  struct EntryNodes {
    pickle::NodeId tensor = pickle::kNoNode;  // the _rebuild_tensor_v2 call
    pickle::NodeId args = pickle::kNoNode;    // its argument tuple
    pickle::NodeId pid = pickle::kNoNode;     // the persistent id naming the storage
  };
  pickle::Graph graph;
  pickle::NodeId root = pickle::kNoNode;       // the OrderedDict
  std::vector<EntryNodes> entries;             // per entry
  std::vector<StorageRecord> storages;  // as StateDictPickle's
  std::vector<size_t> storage_entry;
};

// Errors of both: kInvalidArgument for an entry whose `data` is not itself
// or an earlier data-holding entry of the same dtype and shape, or a
// negative size; kUnsupported for a quantized dtype.
Result<StateDictGraph> BuildStateDict(std::span<const StateDictEntry> entries);
Result<StateDictPickle> EncodeStateDict(std::span<const StateDictEntry> entries);

// Contiguous strides of `shape` as torch computes them.
std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_STATE_DICT_H_
