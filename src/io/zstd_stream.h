// zstd (RFC 8878) on the fly: a StreamSource that decompresses another
// StreamSource, a Sink that compresses into another Sink, and opening inputs
// and outputs by name, where a name ending in ".zst" is (de)compressed and
// "-" is standard input or output.
//
// Offsets in .zst input are offsets of the decompressed stream: that is what
// every reader above a ZstdSource counts (ZstdSource::position()), and what
// the user can check with `zstd -dc FILE | tail -c +N`. Errors raised here
// say so in their message ("in .zst input, offset N of the decompressed
// stream"); errors from the readers above carry the same kind of offset, and
// NoteDecompressedOffset adds those words to them.
//
// Thread safety: none of these objects may be used from two threads at once.
#ifndef ZEROFOLD_IO_ZSTD_STREAM_H_
#define ZEROFOLD_IO_ZSTD_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zerofold/status.h"

namespace zerofold::io {

// RFC 8878 3.1.1: the first four bytes of every zstd frame.
constexpr uint32_t kZstdFrameMagic = 0xFD2FB528;
constexpr std::string_view kZstdSuffix = ".zst";
constexpr std::string_view kStdioName = "-";

struct ZstdOptions {
  // Compression level for output, 1 (fast) to 19 (small); zstd's own
  // default, 3, compresses faster than most disks write. --zstd-level.
  int level = 3;
  // Compression threads besides the caller's (zstd's nbWorkers); 0 compresses
  // in the calling thread. The output depends only on whether it is 0.
  int workers = 0;
  // Largest window a frame of .zst input may need, as a power of two: the
  // decompressor allocates that much. zstd's own default limit, 2^27 bytes;
  // frames written with `zstd --long=31` need 31. --zstd-window-log-max.
  int window_log_max = 27;
};

// Sets the option the CLI flag `name` names (without "--"): "zstd-level"
// (1 to 19), "zstd-threads" (0 to 256), "zstd-window-log-max" (10 to 31).
// kNotFound for another name, the options unchanged; kInvalidArgument
// ("NAME needs a number from LOW to HIGH") outside the range.
Status SetZstdOption(ZstdOptions* options, std::string_view name, uint64_t value);

// Decompresses `inner` (one or more concatenated zstd frames, skippable
// frames allowed) as it is read. position() counts decompressed bytes.
// Errors (offset = the decompressed offset; path = inner's name):
//   kCorrupt  bytes that are not zstd, a checksum mismatch, a stream that
//             ends inside a frame or holds no frame at all;
//   kLimit    a frame that needs a larger window than window_log_max;
//   and inner's own errors, unchanged.
class ZstdSource final : public StreamSource {
 public:
  // Decompresses an owned source.
  static Result<std::unique_ptr<ZstdSource>> Open(std::unique_ptr<StreamSource> inner,
                                                  const ZstdOptions& options = {});
  ~ZstdSource() override;
  ZstdSource(const ZstdSource&) = delete;
  ZstdSource& operator=(const ZstdSource&) = delete;

  Result<size_t> Read(std::span<std::byte> dst) override;
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return inner_->name(); }
  // Compressed bytes consumed from the inner source.
  uint64_t compressed_position() const { return compressed_position_; }

 private:
  struct Context;
  ZstdSource(std::unique_ptr<StreamSource> inner, std::unique_ptr<Context> ctx, int window_log_max);
  Status Error(Code code, const std::string& why) const;

  std::unique_ptr<StreamSource> inner_;
  std::unique_ptr<Context> ctx_;
  int window_log_max_;
  std::vector<std::byte> in_;   // compressed bytes read from inner_: in_[in_pos_, in_end_) unused
  size_t in_pos_ = 0;
  size_t in_end_ = 0;
  bool inner_done_ = false;     // inner_ returned 0
  bool in_frame_ = false;       // a frame was begun and not finished
  bool any_frame_ = false;      // a frame was begun at all
  bool failed_ = false;
  uint64_t position_ = 0;
  uint64_t compressed_position_ = 0;
};

// Compresses what is appended into one zstd frame written to `inner`: the
// frame's content size is left out (the size is not known in advance) and
// its content checksum is on. Finish() ends the frame; bytes appended after
// it are refused. position() counts uncompressed bytes appended.
// Errors: inner's, unchanged; kInternal if zstd itself fails.
class ZstdSink final : public Sink {
 public:
  // `inner` must outlive the sink.
  static Result<std::unique_ptr<ZstdSink>> Open(Sink* inner, const ZstdOptions& options = {});
  ~ZstdSink() override;
  ZstdSink(const ZstdSink&) = delete;
  ZstdSink& operator=(const ZstdSink&) = delete;

  Status Append(std::span<const std::byte> data) override;
  // Writes out what zstd holds so far (a zstd block boundary), then flushes inner.
  Status Flush() override;
  // Ends the frame and flushes inner. Required before committing inner.
  Status Finish();
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return inner_->name(); }

 private:
  struct Context;
  ZstdSink(Sink* inner, std::unique_ptr<Context> ctx);
  Status Drive(std::span<const std::byte> data, int mode);

  Sink* inner_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::byte> out_;
  bool finished_ = false;
  uint64_t position_ = 0;
};

// True for a name ending in ".zst".
bool IsZstdName(std::string_view name);
// True for "-" and names ending in ".zst": inputs read forward only.
bool IsStreamName(std::string_view name);

// Opens an input by name: "-" is standard input, decompressed when it starts
// with a zstd frame; "X.zst" is decompressed; anything else is read as is.
// Errors: Env::OpenStream's, and reading the first bytes of standard input.
Result<std::unique_ptr<StreamSource>> OpenNamedInput(Env* env, const std::string& name,
                                                     const ZstdOptions& options = {});

// An output opened by name: "-" is standard output, "X.zst" a compressed
// atomic file, anything else an atomic file. Write to sink(); Commit() ends
// the zstd frame and commits the file (standard output is only flushed).
// Destroyed without a successful Commit(), a file output leaves its target
// untouched; what went to standard output stays written (but for the bytes
// its sink held back: Env::StdoutSink).
class NamedOutput {
 public:
  virtual ~NamedOutput() = default;
  virtual Sink* sink() = 0;
  // Nothing more is written: the bytes go out and what only appending
  // needs is let go (AtomicFileSink::Close); Commit() after it.
  virtual Status Close() { return sink()->Flush(); }
  virtual Status Commit() = 0;
  // A plain file output, before Commit(): reads back the bytes written
  // (AtomicFileSink::OpenWritten). kInvalidArgument for streams
  // ('-', .zst), which cannot be re-read.
  virtual Result<std::unique_ptr<RandomSource>> OpenWritten() {
    return Status::InvalidArgument("a stream ('-', .zst) cannot be re-read").WithPath(sink()->name());
  }
  // Bytes that reached the file or standard output (compressed for .zst).
  virtual uint64_t stored_bytes() const = 0;
};

// Does not check whether standard output is a terminal: the command line
// refuses that before calling (library code does not look at terminals).
Result<std::unique_ptr<NamedOutput>> OpenNamedOutput(Env* env, const std::string& name,
                                                     const ZstdOptions& options = {});

// `status` with "; in .zst input, offset N of the decompressed stream"
// added to its message when `input` decompresses (OpenNamedInput gave a
// ZstdSource) and the status carries an offset and names `input` as its
// path (or no path); otherwise unchanged.
Status NoteDecompressedOffset(Status status, const StreamSource& input);

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_ZSTD_STREAM_H_
