// Assembling one output tensor of a gather plan (gather/plan.h) from its
// pieces: the tensor's grid is walked in C order as a sequence of blocks,
// each the longest run of consecutive elements one piece provides (a whole
// dim-0 chunk, or one row's share of a dim-1 chunk); each piece is read
// front to back by its own PieceReader, converted to the tensor's output
// dtype (exact widening of 16-bit values; --dtype rounding as torch's .to()
// rounds a contiguous tensor, torch/cast.h) and handed to a consumer in
// chunks of at most buffer_bytes.
//
// Memory: an output buffer and a conversion buffer of buffer_bytes each,
// plus a window per piece being read; pieces read at the same time share
// buffer_bytes between their windows (at least kMinWindowBytes each, or
// buffer_bytes when that is smaller). Windows are kept across pieces and
// tensors (WindowPool), at most twice what the tensor being assembled uses.
// Whatever the tensor's size.
//
// Not thread-safe (the buffers); the sources must outlive the assembler.
#ifndef ZEROFOLD_GATHER_ASSEMBLE_H_
#define ZEROFOLD_GATHER_ASSEMBLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "gather/piece_reader.h"
#include "gather/plan.h"
#include "gather/read_ahead.h"
#include "torch/archive_writer.h"
#include "torch/cast.h"
#include "zerofold/status.h"

namespace zerofold::gather {

// A piece's window never shrinks below this, however many pieces are read
// at once.
inline constexpr size_t kMinWindowBytes = size_t{16} << 10;

// How far ahead of the output the sources are asked to read
// (ReadAheadFor), and the largest range asked at once. bench/RESULTS.md
// ("merge at the disk's floor") measured them.
inline constexpr uint64_t kReadAheadBytes = uint64_t{64} << 20;
inline constexpr uint64_t kReadAheadGranule = uint64_t{8} << 20;

// True if the assembler converts elements of `from` into `to`: equal
// dtypes (copied), or two of float64, float32, float16 and bfloat16
// (rounded as torch 1.13's .to(), see torch/cast.h).
bool CanConvert(torch::DType from, torch::DType to);

class TensorAssembler {
 public:
  // REQUIRES: buffer_bytes >= 16 (it is raised to that).
  TensorAssembler(std::span<const SourceFile> sources, size_t buffer_bytes);

  // Calls emit with the tensor's bytes in its output dtype, row-major, in
  // chunks of at most buffer_bytes, and returns emit's first error. Errors
  // (path: the source file; record: the piece's storage record):
  //   kCorrupt      a piece's view reaches past its storage; the file is
  //                 shorter than its directory says (PieceReader);
  //   kUnsupported  no conversion between a piece's and the tensor's dtype;
  //   kInternal     the pieces do not tile the grid, or name no source;
  //   kIO           a read failed.
  Status Assemble(const GatherTensor& tensor, const torch::EmitBytes& emit);

  // Asks the sources to read ahead (gather/read_ahead.h) for assembling
  // `order` in that order, kReadAheadBytes of output ahead of Assemble():
  // each Assemble() of the next tensor of `order` moves the hints along;
  // other tensors assembled meanwhile get none. The tensors outlive the
  // assembler's next ReadAheadFor().
  void ReadAheadFor(std::vector<const GatherTensor*> order);

  // Source bytes read so far.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  std::span<const SourceFile> sources_;
  zip::OpenEntries deflated_;  // kept open across tensors
  size_t buffer_bytes_;
  std::vector<std::byte> in_;
  std::vector<std::byte> out_;
  WindowPool windows_;
  std::optional<ReadAhead> ahead_;
  std::vector<const GatherTensor*> ahead_order_;
  size_t ahead_next_ = 0;   // the next tensor of ahead_order_
  uint64_t ahead_base_ = 0;  // its first output byte
  uint64_t bytes_read_ = 0;
};

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_ASSEMBLE_H_
