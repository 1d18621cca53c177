// Reading a tensor view's logical bytes, in C order, from its storage in a
// file: what `tensor.contiguous()` holds, produced through bounded buffers.
// The view is read as a one-piece gather (gather/piece_reader.h): strided
// views (transposes, slices, expands with zero strides) as their contiguous
// innermost runs; a view whose byte extent fits the window with one read.
#ifndef ZEROFOLD_GATHER_VIEW_READER_H_
#define ZEROFOLD_GATHER_VIEW_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/status.h"

namespace zerofold::gather {

// Receives the next bytes of the view: a whole number of elements.
using EmitChunk = std::function<Status(std::span<const std::byte>)>;

// Holds an output buffer of about buffer_bytes, reused by every Gather, and
// while gathering a read window of at most buffer_bytes.
// Not thread-safe; one Gatherer per thread.
class Gatherer {
 public:
  explicit Gatherer(size_t buffer_bytes);

  // Emits the elements of `view` in C order, in chunks of at most the buffer
  // size, reading its storage, whose byte 0 is at `storage_data_offset` in
  // src. An empty view emits nothing. kCorrupt if the view's extent cannot
  // be computed; kUnsupported for packed sub-byte dtypes (quint4x2,
  // quint2x4); read errors as src returns them (the caller adds the record).
  // REQUIRES: the view lies inside its storage's bytes in src (CheckViews).
  Status Gather(const RandomSource& src, uint64_t storage_data_offset, const torch::Tensor& view,
                const EmitChunk& emit);

 private:
  size_t buffer_bytes_;
  std::vector<std::byte> out_;
};

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_VIEW_READER_H_
