// The checkpoint model: what a torch file holds, as storages and tensor views
// over them, with the pickle graph kept whole for writers.
//
// Built from a torch zip archive or the legacy (torch < 1.6) format by
// ReadCheckpoint (torch/read.h). Reads only the container's directory and the pickle(s):
// storage bytes are located, never read.
//
// Patching (for writers that move views, e.g. shrink; torch/retarget.h does
// it). Every tensor view is a rebuild call in the graph whose argument tuple
// `Tensor::args` starts with (storage pid, storage_offset, size, stride, ...)
// (positions kArgStorage, kArgStorageOffset in torch/format.h):
//   - item kArgStorage is `Tensor::pid`, a kPersId node whose value is the
//     tuple ('storage', class, key, location, numel[, view_metadata]). To
//     move the view to another storage, build a new pid tuple (new key;
//     numel in elements of the class, or in bytes for torch.UntypedStorage,
//     see ParseStoragePid in torch/tensor_recognizer.h; five items for zip
//     output) and a new kPersId node, and ReplaceItem(args, kArgStorage,
//     new_pid). Do not edit the old pid tuple in place: other views may
//     share it.
//   - item kArgStorageOffset is the storage offset in elements of the
//     tensor's dtype: ReplaceItem(args, kArgStorageOffset, AddInt(offset)).
// A node reached by two paths (a tied weight) appears as two Tensors with the
// same `node`, `rebuild` and `args`: patch each args tuple once. Two views of
// one storage have different args tuples and both must be patched.
// `storages` also lists storages no tensor views (a bare storage in the
// pickle, or a pid unreachable from the root): a writer copies or refuses
// them. Storage::pid_node is only the first pid naming the storage; every
// pid that names a key is found by scanning the graph's kPersId nodes.
//
// Thread safety: a Checkpoint is a value; ReadCheckpoint is thread-safe for
// distinct sources.
#ifndef ZEROFOLD_TORCH_CHECKPOINT_H_
#define ZEROFOLD_TORCH_CHECKPOINT_H_

#include <cstdint>
#include <span>
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
  DType dtype;              // element type of the storage class (UntypedStorage: the first tensor's dtype)
  bool untyped = false;     // the pid class is torch.UntypedStorage: its numel counts bytes
  uint64_t nbytes = 0;      // declared size in bytes (numel x itemsize; untyped: numel)
  std::string location;     // "cpu", "cuda:0", ...
  std::string record;       // "archive/data/0", or "storage KEY" for legacy input
  // Absolute offset of the first byte in the file; zip::kUnlocated for a
  // zip record read with ReadOptions::locate_records false.
  uint64_t data_offset = 0;
  uint64_t header_offset = 0;  // zip: the record's local header
  uint64_t room_end = 0;       // zip: where the record's room ends (zip::Entry::room_end)
  uint64_t record_size = 0; // bytes available in the record (>= nbytes), uncompressed
  // How the record's bytes lie at data_offset: zip method 0 (stored; legacy
  // records too) or 8 (deflated, compressed_size bytes whose inflated CRC-32
  // is crc32). Read them through torch/storage_source.h.
  uint16_t method = 0;
  uint64_t compressed_size = 0;
  uint32_t crc32 = 0;
  pickle::NodeId pid_node = pickle::kNoNode;  // the first persistent-id tuple naming it
  // Runs of bytes torch reverses when it loads the storage (torch/storage_source.h):
  // 1 unless the archive's byteorder record says big.
  uint32_t swap_unit = 1;
};

// One step of a tensor's path from the root: a dict key (str or int), a
// list/tuple index, or an attribute of a symbolic object ("state"/"args").
// Dict keys of other kinds (None, bool, float, tuple) become kStrKey with
// their Python repr ("None", "True", "(1, 2)").
struct PathElem {
  enum class Type : uint8_t { kStrKey, kIntKey, kIndex, kAttr } type;
  std::string str;    // kStrKey, kAttr
  int64_t num = 0;    // kIntKey, kIndex
};

// The path elements joined with "." (str keys and attributes as they are,
// int keys and indices in decimal). "" for the root itself.
std::string JoinPath(std::span<const PathElem> path);

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
  // The tuple (storage, storage_offset, size, stride, ...) the rebuild call
  // takes: item 0 is `pid`, item 1 the offset (see "Patching" above).
  pickle::NodeId args = pickle::kNoNode;
  pickle::NodeId pid = pickle::kNoNode;      // the kPersId node naming the storage

  // Product of shape (0 if any dim is 0), saturating at UINT64_MAX.
  // ReadCheckpoint guarantees numel() x itemsize fits in int64.
  uint64_t numel() const;
  uint64_t nbytes() const; // numel x itemsize, saturating
};

// Half-open byte range [begin, end) within a storage.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The stride-aware byte extent of a view: from offset to
// offset + sum((size_i - 1) * stride_i) + 1 elements, times itemsize.
// Empty tensors (a zero dim) have no extent: returns an empty range {0, 0}.
// kCorrupt for negative strides, sizes or offsets, a size/stride count
// mismatch, or arithmetic overflow; ViewExtent names the tensor as record.
Result<ByteRange> ViewExtent(const Tensor& tensor);
Result<ByteRange> ExtentOf(std::span<const int64_t> shape, std::span<const int64_t> stride,
                           int64_t storage_offset, uint32_t itemsize);

// "[2, 3]": a shape or stride as torch prints it, for messages.
std::string ShapeText(std::span<const int64_t> shape);

struct ReadOptions {
  pickle::DecodeLimits pickle;
  zip::ReadOptions zip;
  uint64_t max_pickle_bytes = 1ull << 32;  // data.pkl held in memory; --max-pickle-bytes
  // Steps taken naming tensors: each graph node visited (a node reached by
  // k paths counts k times) and each step of each tensor's path, which the
  // tensor keeps; more is kLimit. Bounds the time and the memory naming
  // takes, which shared subgraphs multiply (a 1 KB pickle can reach one
  // tensor by 2^40 paths). Raise with --max-graph-visits.
  uint64_t max_graph_visits = 1ull << 22;
  // Steps in one tensor's path; more is kLimit. Raise with --max-path-depth.
  uint32_t max_path_depth = 10000;
  // zip: read the local header (zip::LocateEntry) of each storage record
  // and each other record, so that Storage::data_offset is known and a bad
  // local header is refused here. false (listings, which need no offsets):
  // they stay zip::kUnlocated and no byte of a storage record is read.
  bool locate_records = true;
};

// Sets the limit the CLI flag `name` names (without "--"):
// "max-pickle-depth", "max-pickle-memo", "max-pickle-stack",
// "max-pickle-nodes", "max-pickle-bytes", "max-graph-visits",
// "max-path-depth". kNotFound for another name, the options unchanged;
// kInvalidArgument for a depth above 4294967295.
Status SetReadLimit(ReadOptions* options, std::string_view name, uint64_t value);

struct Checkpoint {
  Format format = Format::kTorchZip;
  std::string top_folder;        // zip: the archive's top folder; legacy: ""
  pickle::Graph graph;
  pickle::NodeId root = pickle::kNoNode;
  std::vector<Storage> storages; // in order of first reference in the pickle
  std::vector<Tensor> tensors;   // in order of first visit, depth first; one per path
  // "module.name" of every global on no allowlist (pickle/safety.h), as
  // the pickle writes it, first seen first; the legacy format's four small
  // pickles included. pickle::UnsafeReason gives each one's reason.
  std::vector<std::string> unsafe_globals;
  // zip: records other than data.pkl and data/* (version, byteorder,
  // .data/serialization_id, .format_version, .storage_alignment), kept for writers.
  std::vector<zip::Entry> other_records;
  bool big_endian = false;       // zip "byteorder" record says big
  uint64_t pickle_offset = 0;    // absolute offset of data.pkl / the object pickle
  uint64_t pickle_size = 0;
  // zip: records in the archive, and how many of them are deflated (method
  // 8; read through inflate, written stored). The stream reader counts the
  // records it has met.
  uint64_t zip_records = 0;
  uint64_t deflated_records = 0;
  // zip: non-empty records whose CRC-32 is 0, not recorded (torch >= 2.6
  // after torch.serialization.set_crc32_options(False)) and so not checked.
  // Counted from the central directory; the stream reader does not count.
  uint64_t crc_unrecorded_records = 0;
};

// Checks that every storage's record holds its declared bytes and every
// tensor's view lies inside its storage (and has fewer than 2^63 bytes).
// kCorrupt names the record or the tensor. ReadCheckpoint calls it; writers
// may call it on a patched model.
Status CheckViews(const Checkpoint& ckpt);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_CHECKPOINT_H_
