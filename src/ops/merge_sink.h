// A Sink that writes to another sink on a background thread, so that the
// copy into the page cache (most of a merge's time: the kernel's
// copy_folio_from_iter) overlaps with reading, converting and checksumming
// the next bytes on the calling thread.
//
// Bytes are copied into one of two buffers of `buffer_bytes`; a full buffer
// goes to the writer thread while the caller fills the other. At most one
// buffer is in flight, so memory is 2 x buffer_bytes and the target sees
// the bytes in order. If the thread cannot be started, appends go straight
// to the target.
//
// Errors of the target are sticky: the first is returned by the next
// Append or by Drain, and every call after it returns it again.
//
// Not thread-safe: one thread calls Append and Drain. The target must not
// be used until Drain has returned, and must outlive this sink.
#ifndef ZEROFOLD_OPS_MERGE_SINK_H_
#define ZEROFOLD_OPS_MERGE_SINK_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::ops {

class BackgroundWriteSink final : public Sink {
 public:
  BackgroundWriteSink(Sink* target, size_t buffer_bytes);
  // Waits for the writer; bytes not drained are dropped (the caller failed).
  ~BackgroundWriteSink() override;
  BackgroundWriteSink(const BackgroundWriteSink&) = delete;
  BackgroundWriteSink& operator=(const BackgroundWriteSink&) = delete;

  Status Append(std::span<const std::byte> data) override;
  // Writes what is buffered and waits until the target has every byte;
  // returns the first error of the target.
  Status Drain();
  Status Flush() override { return Drain(); }
  uint64_t position() const override { return position_; }  // bytes accepted
  const std::string& name() const override { return target_->name(); }

 private:
  // Hands fill_ to the writer (waiting until it is idle) and swaps buffers.
  Status Hand();
  // Waits until no buffer is in flight; the writer's error, if any.
  Status WaitIdle();
  void Run();

  Sink* target_;
  std::vector<std::byte> fill_;     // being filled by the caller
  size_t filled_ = 0;
  std::vector<std::byte> flight_;   // being written by the writer thread
  size_t flight_size_ = 0;
  uint64_t position_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;   // flight_ holds bytes the writer has not written yet
  bool stop_ = false;
  Status error_;        // the target's first error (guarded by mu_)
  bool threaded_ = false;
  std::thread writer_;
};

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_MERGE_SINK_H_
