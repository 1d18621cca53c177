// The checkpoint model: what a torch file holds, as storages and tensor views
// over them, with the pickle graph kept whole for writers.
//
// Built from a torch zip archive or the legacy (torch < 1.6) format by
// ReadCheckpoint. Reads only the container's directory and the pickle(s):
// storage bytes are located, never read.
#ifndef ZEROFOLD_TORCH_CHECKPOINT_H_
#define ZEROFOLD_TORCH_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "pickle/decoder.h"
#include "pickle/graph.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"

namespace zerofold::torch {

enum class Format { kTorchZip, kTorchLegacy };
std::string_view FormatName(Format format);  // "torch-zip", "torch-legacy"

struct Storage {
  std::string key;          // "0", or a legacy decimal address
  DType dtype;              // element type of the storage class (UntypedStorage: the tensor's dtype)
  uint64_t nbytes = 0;      // declared size in bytes (numel x itemsize)
  std::string location;     // "cpu", "cuda:0", ...
  std::string record;       // "archive/data/0", or "storage KEY" for legacy input
  uint64_t data_offset = 0; // absolute offset of the first byte in the file
  uint64_t record_size = 0; // bytes available in the record (>= nbytes)
  pickle::NodeId pid_node = pickle::kNoNode;  // the first persistent-id tuple naming it
};

// One step of a tensor's path from the root: a dict key (str or int), a
// list/tuple index, or an attribute of a symbolic object ("state"/"args").
struct PathElem {
  enum class Type : uint8_t { kStrKey, kIntKey, kIndex, kAttr } type;
  std::string str;    // kStrKey, kAttr
  int64_t num = 0;    // kIntKey, kIndex
};

struct Tensor {
  std::string name;              // path joined with "."
  std::vector<PathElem> path;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t storage_offset = 0;    // in elements
  uint32_t storage = 0;          // index into Checkpoint::storages
  bool requires_grad = false;
  bool is_parameter = false;
  bool quantized = false;
  pickle::NodeId node = pickle::kNoNode;     // node the path reaches (Parameter or tensor)
  pickle::NodeId rebuild = pickle::kNoNode;  // the _rebuild_tensor* object node

  uint64_t numel() const;  // product of shape (0 if any dim is 0)
  uint64_t nbytes() const; // numel x itemsize
};

// Half-open byte range [begin, end) within a storage.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The stride-aware byte extent of a view: from offset to
// offset + sum((size_i - 1) * stride_i) + 1 elements, times itemsize.
// Empty tensors (a zero dim) have no extent: returns an empty range {0, 0}.
// kCorrupt for negative strides, sizes or offsets, or arithmetic overflow.
Result<ByteRange> ViewExtent(const Tensor& tensor);

struct ReadOptions {
  pickle::DecodeLimits pickle;
  zip::ReadOptions zip;
  uint64_t max_pickle_bytes = 1ull << 32;  // data.pkl held in memory; --max-pickle-bytes
};

struct Checkpoint {
  Format format = Format::kTorchZip;
  std::string top_folder;        // zip: the archive's top folder; legacy: ""
  pickle::Graph graph;
  pickle::NodeId root = pickle::kNoNode;
  std::vector<Storage> storages; // in order of first reference in the pickle
  std::vector<Tensor> tensors;   // in order of first visit, depth first; one per path
  std::vector<std::string> unsafe_globals;
  // zip: records other than data.pkl and data/* (version, byteorder,
  // .data/serialization_id, .format_version, .storage_alignment), kept for writers.
  std::vector<zip::Entry> other_records;
  bool big_endian = false;       // zip "byteorder" record says big
  uint64_t pickle_offset = 0;    // absolute offset of data.pkl / the object pickle
  uint64_t pickle_size = 0;
};

// Reads a torch file. kCorrupt/kUnsupported name the record and offset:
// TorchScript archives (constants.pkl, code/), the "PYTORCH1" preview format,
// a storage record shorter than its declared bytes, a view that leaves its
// storage, big-endian data. Unsafe globals are listed, not refused.
Result<Checkpoint> ReadCheckpoint(const RandomSource& src, const ReadOptions& options = {});

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_CHECKPOINT_H_
