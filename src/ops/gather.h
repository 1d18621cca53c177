// Reading a tensor view's logical bytes, in C order, from its storage in a
// file: what `tensor.contiguous()` holds, produced through bounded buffers.
// Strided views (transposes, slices, expands with zero strides) are read as
// their contiguous innermost runs; a view whose byte extent fits the window
// is read with one read.
#ifndef ZEROFOLD_OPS_GATHER_H_
#define ZEROFOLD_OPS_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/status.h"

namespace zerofold::ops {

// Receives the next bytes of the view: a whole number of elements.
using EmitChunk = std::function<Status(std::span<const std::byte>)>;

// Holds two buffers of about buffer_bytes each, reused by every Gather.
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
  // Appends `len` storage bytes at `pos` to out_, emitting when it is full.
  Status Fetch(uint64_t pos, uint64_t len, const EmitChunk& emit);
  Status Flush(const EmitChunk& emit);

  std::vector<std::byte> out_;
  std::vector<std::byte> window_;
  size_t out_size_ = 0;     // usable bytes of out_ for the current view: whole elements
  size_t out_fill_ = 0;
  // The current view's source, and which of its storage bytes window_ holds.
  const RandomSource* src_ = nullptr;
  uint64_t base_ = 0;       // storage_data_offset
  uint64_t extent_end_ = 0; // storage bytes past the view's last byte are never read
  uint64_t window_begin_ = 0;
  uint64_t window_end_ = 0;
  bool use_window_ = false;
};

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_GATHER_H_
