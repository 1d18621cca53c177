// Reading one piece of a gather plan (gather/plan.h) front to back: the
// elements of its strided view in the box's C order, in the storage's
// dtype, as many as the caller asks for at a time.
//
// Pieces are read positionally through a window the caller lends: a
// contiguous view front to back, reads of kFirstWindowBytes or more
// straight into the caller's buffer and smaller ones (a row's share of a
// dim-1 chunk) through the window, a whole window (or the rest of the view)
// per refill; a strided view whose byte extent fits the window with one
// read; other strided views a window at a time, or run by run when their
// runs are short and far apart (a large transpose). A zstd piece is decompressed as a
// stream, skipping forward to each read; a read behind the stream's
// position (a strided view larger than the window) decompresses the frame
// again from its start: correct in bounded memory, slow for large
// transposed chunks (torch's writers save contiguous ones). A deflated
// record is inflated forward in the same way (zip/entry_source.h).
//
// Memory: the caller's window (plus zstd's context for a zstd piece); the
// reader allocates none, so pieces read one after another reuse the same
// window (WindowPool) without a new allocation, zero-fill or page faults
// each. Not thread-safe. The piece, the source and the window outlive the
// reader.
#ifndef ZEROFOLD_GATHER_PIECE_READER_H_
#define ZEROFOLD_GATHER_PIECE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gather/plan.h"
#include "zerofold/env.h"
#include "zerofold/status.h"
#include "zip/entry_source.h"

namespace zerofold::gather {

// The smallest read of a contiguous view that goes around the window.
inline constexpr size_t kFirstWindowBytes = size_t{64} << 10;

// The smallest window a PieceReader takes.
inline constexpr size_t kMinReaderWindowBytes = 64;

// Read windows lent to PieceReaders and given back, so that the pieces of
// every tensor reuse the same memory. Windows are allocated without being
// zero-filled (a reader writes before it reads) and kept idle between
// pieces; Keep() frees what a tensor will not use, so the pool holds at
// most 2 x count x bytes of its last Keep() (plus windows taken larger).
// Not thread-safe.
class WindowPool {
 public:
  struct Window {
    std::unique_ptr<std::byte[]> bytes;
    size_t size = 0;
    std::span<std::byte> span() const { return {bytes.get(), size}; }
  };

  // Frees the idle windows beyond `count` and those over 2 x `bytes`.
  void Keep(size_t count, size_t bytes);
  // An idle window of at least `bytes` (an idle one regrown if smaller,
  // a new one if none is idle). std::bad_alloc when memory is short.
  Window Take(size_t bytes);
  // Makes a window taken from this pool idle again.
  void Give(Window window);

  size_t idle_count() const { return idle_.size(); }
  size_t idle_bytes() const;

 private:
  std::vector<Window> idle_;  // most recently given last
};

class PieceReader {
 public:
  // REQUIRES: CheckPieceView(piece) passed; window.size() >=
  // kMinReaderWindowBytes. `records`, when given, serves deflated pieces
  // (Transform::kDeflate) and outlives the reader: pieces of one record
  // read through one keeper continue inflating where the one before
  // stopped. Else the reader opens its own.
  PieceReader(const Piece& piece, const SourceFile& file, std::span<std::byte> window,
              zip::OpenEntries* records = nullptr);
  ~PieceReader();
  PieceReader(const PieceReader&) = delete;
  PieceReader& operator=(const PieceReader&) = delete;

  // Fills dst with the next dst.size() / itemsize elements. Errors (path:
  // the file; record: the piece's): kCorrupt when the file or the frame ends
  // before the view does, or for bad zstd data; kIO from reads;
  // kInvalidArgument when asked for more elements than the view has left.
  Status Read(std::span<std::byte> dst);

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  struct Dim {
    int64_t size;
    int64_t stride;
  };
  enum class Mode : uint8_t { kForward, kWholeExtent, kStridedWindow, kRunByRun };
  // Fills dst with storage bytes from `pos`, through or around the window.
  Status Fetch(uint64_t pos, std::span<std::byte> dst);
  // Reads the window: storage bytes [pos, pos + size) clipped to the extent.
  Status Refill(uint64_t pos, size_t size);
  // dst.size() bytes of the storage from byte `pos`.
  Status ReadStorage(uint64_t pos, std::span<std::byte> dst);
  Status Fail(Status s) const;

  const Piece& piece_;
  const SourceFile& file_;
  const uint64_t itemsize_;
  uint64_t left_ = 0;        // elements not yet read
  // Untransformed: runs of `run_` elements; `outer_` steps between them.
  std::vector<Dim> outer_;
  std::vector<int64_t> index_;
  uint64_t run_ = 1;
  uint64_t run_left_ = 0;    // elements left in the current run
  uint64_t element_ = 0;     // storage element the current run starts at
  uint64_t extent_end_ = 0;  // storage bytes past the view's last one are never read
  Mode mode_ = Mode::kForward;
  std::span<std::byte> window_;  // the caller's
  size_t window_capacity_ = 0;    // bytes of window_ used
  uint64_t window_begin_ = 0, window_end_ = 0;  // storage bytes window_ holds
  // zstd: the decompressing stream, at storage byte stream_pos_.
  std::unique_ptr<StreamSource> stream_;
  // deflate: the records' keeper (the caller's, or own_records_).
  zip::OpenEntries* records_;
  zip::OpenEntries own_records_;
  uint64_t stream_pos_ = 0;
  uint64_t bytes_read_ = 0;
};

// Inflates every deflated record the plan's pieces read (Transform::kDeflate)
// once to its end, checking its sizes and CRC-32, before any output is
// written: pieces read only their views' bytes, so they cannot. kCorrupt
// naming the file and record.
Status CheckDeflatedRecords(const GatherPlan& plan);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_PIECE_READER_H_
