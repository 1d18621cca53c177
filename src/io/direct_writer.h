// DirectWriter: appends to a new file's descriptor on a writer thread, with
// O_DIRECT where the filesystem allows it, so large outputs go from an
// aligned buffer to the disk without passing through the page cache, while
// the caller prepares the next bytes.
//
// Why: on this project's machines a buffered write of 1 GiB plus fsync took
// 1.16 s and an O_DIRECT write of the same bytes in 4 MiB blocks 0.35 s
// (dd, bench/RESULTS.md): the page cache's allocation and copy, not the disk,
// bound the buffered form. Output files are not read again soon, so keeping
// them out of the cache also leaves it to the inputs.
//
// How: appends are copied into one of two staging buffers of kChunkBytes
// (aligned to kAlignBytes). A full buffer goes to the writer thread, which
// writes it with O_DIRECT while the caller fills the other; at most one is
// in flight. Finish() waits for the thread, writes the staged bytes' whole
// kAlignBytes blocks directly, clears O_DIRECT and writes the tail through
// the cache. When the filesystem refuses O_DIRECT (tmpfs, some FUSE and
// network filesystems: fcntl or write fails with EINVAL), or a direct write
// is short, the writer clears the flag and goes on buffered, in write(2)
// calls of at most kMaxBufferedWriteBytes; the bytes on disk are the same.
// Small files (under kChunkBytes) start no thread. Without a thread (one
// cannot be started) the buffers are written on the caller's thread. The
// buffers are allocated like any other memory: std::bad_alloc when short.
//
// Errors carry `name` (the path the user gave) and are sticky: the first is
// returned by the next Append or Finish, and by every call after it.
// Memory: 2 x kChunkBytes from the first Append until Finish.
// Not thread-safe: one thread calls Append and Finish. The descriptor stays
// owned by the caller, who fsyncs and closes it after Finish.
#ifndef ZEROFOLD_IO_DIRECT_WRITER_H_
#define ZEROFOLD_IO_DIRECT_WRITER_H_

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

class DirectWriter {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  static constexpr size_t kAlignBytes = 4096;

  // fd: a file opened for writing (without O_APPEND) whose offset is
  // start_offset: a new file's 0, or where standard output stands. Direct
  // writes happen only at offsets that are multiples of kAlignBytes.
  DirectWriter(int fd, std::string name, uint64_t start_offset = 0);
  // Waits for the writer thread; bytes not finished are dropped.
  ~DirectWriter();
  DirectWriter(const DirectWriter&) = delete;
  DirectWriter& operator=(const DirectWriter&) = delete;

  Status Append(std::span<const std::byte> data);
  // Writes every appended byte, stops the thread and frees the buffers.
  // Appends after it go through the cache (the end may not be aligned).
  Status Finish();
  // Bytes appended so far.
  uint64_t position() const { return accepted_; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  using Buffer = std::unique_ptr<std::byte, FreeDeleter>;

  // Hands the full fill_ buffer to the writer thread (or writes it here).
  Status Hand();
  // Waits until no buffer is in flight; the first error.
  Status WaitIdle();
  // Records s as the error unless one came first; returns the first.
  Status Fail(Status s);
  void StopThread();
  void Run();
  // Writes n bytes at the file's end: whole kAlignBytes blocks with
  // O_DIRECT where possible, the rest through the cache. Called by one
  // thread at a time (the writer thread, or the caller when it is idle).
  Status WriteBlock(const std::byte* data, size_t n);
  Status WriteBuffered(const std::byte* data, size_t n);
  void StopDirect();

  const int fd_;
  const std::string name_;
  Buffer fill_;            // being filled by the caller
  size_t filled_ = 0;
  Buffer flight_;          // being written by the thread
  uint64_t accepted_ = 0;  // bytes appended

  // Used by WriteBlock only.
  uint64_t written_;      // the file offset: start_offset + bytes written
  bool direct_ = false;   // O_DIRECT is set on fd_
  bool may_direct_ = true;

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

#endif  // ZEROFOLD_IO_DIRECT_WRITER_H_
