// FlushBehindWriter: appends to a new file's descriptor on a writer thread,
// through the page cache, starting the disk write of each kFlushBytes as
// soon as it is written and dropping it from the cache once it is on disk,
// while the caller prepares the next bytes.
//
// Why: on this project's machines (VMs that return freed memory to the
// host) the page cache's allocation of fresh pages, not the disk, bounds a
// plain buffered write. Writing 1.34 GB here (bench/RESULTS.md, "merge at
// the disk's floor", 2026-12-04, 10+ runs each): 128 KiB write(2) calls
// then fsync 4.1-6.1 s; O_DIRECT in 4 MiB blocks, one in flight, 0.86-2.6 s
// (median 1.8); the same buffered writes with write-back started every
// 8 MiB and the pages dropped two steps behind 0.92-1.6 s (median 1.1).
// The dropped pages are reused, warm, for the next bytes, and the disk
// always has the last 16 MiB queued. Output files are not read again soon, so dropping them also leaves the
// cache to the inputs.
//
// How: appends are copied into one of two staging buffers of kChunkBytes.
// A full buffer goes to the writer thread, which writes it (write(2) calls
// of at most kMaxBufferedWriteBytes) while the caller fills the other; at
// most one is in flight. After every kFlushBytes written the thread starts
// their write-back (Linux: sync_file_range), then waits for the write-back
// started the step before last and drops those pages (posix_fadvise
// DONTNEED). Finish() waits for the thread and writes the staged bytes.
// Where the file cannot be flushed behind (not Linux; sync_file_range
// refused as for a pipe), it is written through the cache alone; the bytes
// on disk are the same. Small files (under kChunkBytes) start no thread.
// Without a thread (one cannot be started) the buffers are written on the
// caller's thread. The buffers are allocated like any other memory:
// std::bad_alloc when short.
//
// Errors carry `name` (the path the user gave) and are sticky: the first is
// returned by the next Append or Finish, and by every call after it. A
// write-back error seen while waiting (EIO) is a write error.
// Memory: 2 x kChunkBytes from the first Append until Finish.
// Not thread-safe: one thread calls Append and Finish. The descriptor stays
// owned by the caller, who fsyncs and closes it after Finish.
#ifndef ZEROFOLD_IO_FLUSH_BEHIND_WRITER_H_
#define ZEROFOLD_IO_FLUSH_BEHIND_WRITER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "zerofold/status.h"

namespace zerofold::io {

class FlushBehindWriter {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  // Write-back is started, waited for and dropped in steps of this many
  // bytes (4 and 16 MiB measured the same as 8 on this project's machines).
  static constexpr uint64_t kFlushBytes = uint64_t{8} << 20;

  // fd: a file opened for writing (without O_APPEND) whose offset is
  // start_offset: a new file's 0, or where standard output stands.
  FlushBehindWriter(int fd, std::string name, uint64_t start_offset = 0);
  // Waits for the writer thread; bytes not finished are dropped.
  ~FlushBehindWriter();
  FlushBehindWriter(const FlushBehindWriter&) = delete;
  FlushBehindWriter& operator=(const FlushBehindWriter&) = delete;

  Status Append(std::span<const std::byte> data);
  // Writes every appended byte, stops the thread and frees the buffers.
  // Appends after it go on at the end.
  Status Finish();
  // Bytes appended so far.
  uint64_t position() const { return accepted_; }
  // Bytes written and dropped from the page cache so far (their write-back
  // done). Only stable after Finish().
  uint64_t dropped_bytes() const { return dropped_ - start_; }

 private:
  using Buffer = std::unique_ptr<std::byte[]>;

  // Hands the full fill_ buffer to the writer thread (or writes it here).
  Status Hand();
  // Waits until no buffer is in flight; the first error.
  Status WaitIdle();
  // Records s as the error unless one came first; returns the first.
  Status Fail(Status s);
  void StopThread();
  void Run();
  // Writes n bytes at the file's end, then flushes behind. Called by one
  // thread at a time (the writer thread, or the caller when it is idle).
  Status WriteBlock(const std::byte* data, size_t n);
  Status FlushBehind();

  const int fd_;
  const std::string name_;
  const uint64_t start_;
  Buffer fill_;            // being filled by the caller
  size_t filled_ = 0;
  Buffer flight_;          // being written by the thread
  uint64_t accepted_ = 0;  // bytes appended

  // Used by WriteBlock only: file offsets.
  uint64_t written_;       // start_offset + bytes written
  uint64_t started_;       // write-back started for [.., started_)
  uint64_t previous_;      // started_ one step before
  uint64_t dropped_;       // waited for and dropped: [start_, dropped_)
  bool may_flush_ = true;  // sync_file_range works on fd_

  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;  // flight_ holds kChunkBytes not written yet
  bool stop_ = false;
  Status error_;       // the first error
  bool threaded_ = false;
  bool no_thread_ = false;  // starting one failed: write on the caller's thread
  std::thread thread_;
};

// Bytes per buffered write(2). Larger writes gain nothing and, on VMs that
// return freed memory to the host (free page reporting), cost 3-5x: the
// kernel fills the page cache in large blocks whose first touch faults on
// the host (cat, with 128 KiB, does not pay it). bench/shrink_bench.py
// measured both.
inline constexpr size_t kMaxBufferedWriteBytes = size_t{128} << 10;

// write(2) of every byte, in pieces of at most kMaxBufferedWriteBytes,
// retrying on EINTR; errors name `name`.
Status WriteAllBuffered(int fd, const std::string& name, std::span<const std::byte> data);

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_FLUSH_BEHIND_WRITER_H_
