// Reading a tensor view's logical bytes, in C order, from its storage in a
// file: what `tensor.contiguous()` holds, produced through bounded buffers.
// The view is read as a one-piece gather (gather/piece_reader.h) placed by
// PlaceInStorage (gather/plan.h), so a deflated record is inflated as every
// other reader of storages inflates it: strided views (transposes, slices,
// expands with zero strides) as their contiguous innermost runs; a view
// whose byte extent fits the window with one read.
#ifndef ZEROFOLD_GATHER_VIEW_READER_H_
#define ZEROFOLD_GATHER_VIEW_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "gather/piece_reader.h"
#include "io/read_plan.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/status.h"
#include "zip/entry_source.h"

namespace zerofold::gather {

// Receives the next bytes of the view: a whole number of elements.
using EmitChunk = std::function<Status(std::span<const std::byte>)>;

// Holds an output buffer of about buffer_bytes and, from the first Gather
// on, a read window of buffer_bytes, both reused by every Gather; deflated records
// stay open across Gathers (zip::OpenEntries), so views read in storage
// order inflate each record forward once.
// Not thread-safe; one Gatherer per thread.
// Appends the bytes Gatherer::Gather reads for `view` of `storage`, of a
// checkpoint read from `path` (AddPieceReads of the piece it builds).
void AddViewReads(const torch::Storage& storage, const torch::Tensor& view, const std::string& path,
                  io::ReadPlan* plan);

class Gatherer {
 public:
  explicit Gatherer(size_t buffer_bytes);

  // Emits the elements of `view` in C order, in chunks of at most the buffer
  // size, reading `storage` (the view's, of a checkpoint read from `file`).
  // An empty view emits nothing. kCorrupt if the view's extent cannot be
  // computed, for bad deflate data or a deflated record whose end fails its
  // sizes or CRC-32; kUnsupported for packed sub-byte dtypes (quint4x2,
  // quint2x4); read errors as `file` returns them (the caller adds the
  // record). REQUIRES: the view lies inside its storage (CheckViews); `file`
  // outlives this Gatherer.
  Status Gather(const RandomSource& file, const torch::Storage& storage, const torch::Tensor& view,
                const EmitChunk& emit);

  // Reads every deflated record still open to its end, checking its sizes
  // and CRC-32 (zip::OpenEntries::Finish). Call before committing an output.
  Status Finish() { return records_.Finish(); }

 private:
  size_t buffer_bytes_;
  std::vector<std::byte> out_;
  WindowPool::Window window_;
  zip::OpenEntries records_;
};

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_VIEW_READER_H_
