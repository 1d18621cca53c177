// The gather plan: what every merge planner (zero/plan.h for DeepSpeed ZeRO,
// dcp/plan.h for PyTorch Distributed Checkpoint) hands to the one assembler
// and writer in this folder. Per output tensor: its name, dtype and shape,
// and the pieces of source files that fill it.
//
// A piece is a box of the tensor's grid (offsets and sizes per dim) whose
// elements, in the box's C order, are a strided view of a storage in one
// source file: for DCP a chunk of the global shape held by a torch.save
// archive inside a .distcp file, for ZeRO an element range of the
// flattened tensor (grid = {numel}) in a rank's fp32 partition. The
// assembler walks the grid in C order; restricted to one box that is the
// box's own C order, so every piece is read front to back.
//
// A plan is data: built without reading tensor bytes, printable, testable.
#ifndef ZEROFOLD_GATHER_PLAN_H_
#define ZEROFOLD_GATHER_PLAN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/read_plan.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/status.h"
#include "zip/archive.h"

namespace zerofold::gather {

// One file pieces read from. The source outlives every use of the plan.
struct SourceFile {
  std::string path;
  const RandomSource* source = nullptr;
};

// How a piece's storage bytes sit in its file.
enum class Transform : uint8_t {
  kNone,  // as they are, at data_offset
  kZstd,  // inside one zstd frame at [frame_offset, frame_offset + frame_length)
          // whose decompressed bytes are a torch.save archive (DCP `stream.zstd/1`)
  kDeflate,  // a deflated zip record (`deflated`), its inflated bytes the storage's
};

struct Piece {
  // The box of the tensor's grid this piece fills; same rank as the grid.
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;

  uint32_t file = 0;           // index into the plan's sources
  std::string record;          // the storage, for messages ("archive/data/0")
  torch::DType dtype = torch::DType::kFloat32;  // the storage's element type
  // Byte 0 of the storage: absolute in the file (kNone), in the
  // decompressed archive (kZstd), or in the inflated record (kDeflate). storage_nbytes bytes follow it.
  uint64_t data_offset = 0;
  uint64_t storage_nbytes = 0;
  // The view: element `view_offset` of the storage is the box's first
  // element; stepping dim d of the box steps `strides[d]` elements.
  int64_t view_offset = 0;
  std::vector<int64_t> strides;
  Transform transform = Transform::kNone;
  uint64_t frame_offset = 0;   // kZstd only
  uint64_t frame_length = 0;
  // The zip record holding the storage (absolute offsets): kDeflate reads
  // through it (data_offset is then 0); kNone reads of a record with a
  // CRC-32 go through it too, so that pieces reading all of it front to
  // back check the CRC-32 on the way (zip::StreamedCrc). A default Entry
  // (CRC-32 0, not recorded) for other sources.
  zip::Entry entry;
  // Runs of bytes reversed after reading, as torch loads a big-endian
  // archive (torch::Storage::swap_unit); 1: none.
  uint32_t swap_unit = 1;
};

struct GatherTensor {
  std::string name;
  torch::DType dtype = torch::DType::kFloat32;  // output dtype
  std::vector<int64_t> shape;                   // output shape
  // The space the boxes divide: `shape`, or {numel} when pieces are ranges
  // of the flattened tensor. Its C order is the tensor's C order.
  std::vector<int64_t> grid;
  std::vector<Piece> pieces;   // tile the grid exactly (CheckTiling)
};

// `name` is the same tensor as `owner`, a name in GatherPlan::tensors.
struct Tie {
  std::string name;
  std::string owner;

  bool operator==(const Tie&) const = default;
};

struct GatherPlan {
  std::vector<SourceFile> sources;
  std::vector<GatherTensor> tensors;  // planner order
  std::vector<Tie> ties;
};

// Points `p` at the bytes of a torch storage's record, the one way every
// reader of a torch file's storages is given them (merge's ZeRO and DCP
// planners, diff and convert through Gatherer): a stored record (and every
// legacy storage) is read positionally (Transform::kNone), a deflated one
// inflated forward (Transform::kDeflate, through zip::OpenEntries, as
// torch::StorageSources reads it). `archive_offset`: where the storage's
// archive starts in the file (a DCP chunk's archive inside a .distcp file;
// 0 when the file is the archive). Sets record, data_offset,
// storage_nbytes, transform and deflated; the box, dtype and view are the
// caller's.
void PlaceInStorage(const torch::Storage& storage, uint64_t archive_offset, Piece* p);

// Appends to `plan` the bytes of `path` (the piece's file) a PieceReader
// reads for `p`: the view's byte extent in the storage (Transform::kNone),
// the whole compressed record (kDeflate: inflated from its start, read to
// its end for the CRC-32) or the whole zstd frame (kZstd).
// REQUIRES: CheckPieceView(p) passed.
void AddPieceReads(const Piece& p, const std::string& path, io::ReadPlan* plan);

// Appends the bytes a reader of storage bytes [begin, end) of `storage`
// (of a checkpoint read from `path`, located) reads: those bytes of a
// stored record, or the whole compressed record of a deflated one.
void AddStorageReads(const torch::Storage& storage, uint64_t begin, uint64_t end, const std::string& path,
                     io::ReadPlan* plan);

// AddPieceReads for each piece of `tensor`, in plan order (the assembler
// reads the pieces' rows in turn; their ranges are listed piece by piece).
void AddTensorReads(const GatherPlan& plan_of, const GatherTensor& tensor, io::ReadPlan* plan);

// Elements of a shape: the product of its sizes (1 for a scalar).
// REQUIRES: the planner checked the shape (non-negative, no overflow).
uint64_t NumelOf(std::span<const int64_t> shape);

// Bytes of a tensor in its output dtype.
uint64_t OutputBytes(const GatherTensor& tensor);

// The elements of the grid's C order a box spans: its first element and
// one past its last (elements of other boxes may lie between them).
// REQUIRES: a non-empty box inside the grid, of the grid's rank.
struct GridSpan {
  uint64_t first = 0;
  uint64_t end = 0;
};
GridSpan SpanInGrid(std::span<const int64_t> grid, const Piece& p);

// Checks that the pieces' boxes tile `grid` exactly: every box of the
// grid's rank, non-negative, inside the grid, no two sharing an element,
// together covering every element. kCorrupt otherwise, the message naming
// the piece(s) by `piece_names[i]` and the numbers. O(pieces log pieces)
// for a split along one dim; pairs that meet in the sweep dim otherwise.
Status CheckTiling(std::span<const int64_t> grid, std::span<const Piece> pieces,
                   std::span<const std::string> piece_names);

// Checks a piece's view against its storage: strides for every box dim,
// the view's byte extent inside storage_nbytes, whole elements.
// kCorrupt naming the numbers.
Status CheckPieceView(const Piece& piece);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_PLAN_H_
