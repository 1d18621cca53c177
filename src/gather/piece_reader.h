// Reading one piece of a gather plan (gather/plan.h) front to back: the
// elements of its strided view in the box's C order, in the storage's
// dtype, as many as the caller asks for at a time.
//
// Pieces are read positionally through a window of at most `window_bytes`:
// a contiguous view front to back, reads of kFirstWindowBytes or more
// straight into the caller's buffer and smaller ones (a row's share of a
// dim-1 chunk) through a window that starts at kFirstWindowBytes and doubles
// with each refill; a strided view whose byte extent fits the window with
// one read; other strided views a window at a time, or run by run when
// their runs are short and far apart (a large transpose). A zstd piece is decompressed as a
// stream, skipping forward to each read; a read behind the stream's
// position (a strided view larger than the window) decompresses the frame
// again from its start: correct in bounded memory, slow for large
// transposed chunks (torch's writers save contiguous ones). A deflated
// record is inflated forward in the same way (zip/entry_source.h).
//
// Memory: the window (plus zstd's context for a zstd piece). Not
// thread-safe. The piece and the source outlive the reader.
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

// The first window of a contiguous view, and the smallest read that goes
// around the window.
inline constexpr size_t kFirstWindowBytes = size_t{64} << 10;

class PieceReader {
 public:
  // REQUIRES: CheckPieceView(piece) passed. `records`, when given, serves
  // deflated pieces (Transform::kDeflate) and outlives the reader: pieces
  // of one record read through one keeper continue inflating where the one
  // before stopped. Else the reader opens its own.
  PieceReader(const Piece& piece, const SourceFile& file, size_t window_bytes,
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
  std::vector<std::byte> window_;
  size_t window_capacity_ = 0;
  size_t next_window_ = kFirstWindowBytes;      // kForward: the next refill's size
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
