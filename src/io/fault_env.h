// FaultEnv: wraps another Env and injects failures, for tests.
//
// Faults (each stays set until changed; 0 turns it off, kNever for
// TruncateReadsAt):
//   FailRead(n)        the n-th read (RandomSource::ReadAt or
//                      StreamSource::Read, counted from 1 over every source
//                      opened through this env) fails with kIO;
//   TruncateReadsAt(k) random reads return nothing at or past byte k, though
//                      size() still says more: the file shrank while open;
//   SetStreamChunk(n)  stream reads return at most n bytes (legal short
//                      reads: a reader must give the same result);
//   SetSpace(k)        the disk holds k bytes: appends to atomic files past
//                      a total of k bytes (over every sink of this env) write
//                      what fits, then fail with kIO "No space left on device";
//   FailCommit(n)      the n-th Commit() fails with kIO before renaming, as a
//                      failed rename does; the temp file is removed when the
//                      sink is destroyed;
//   SetFreeBytes(k)    FreeBytes says k (kNever: what the wrapped env says),
//                      whatever SetSpace makes the writes do;
//   FlipWrittenByte(k) the byte at offset k of every atomic file is written
//                      with its bits inverted, silently (a disk that corrupts
//                      what it is given: what --verify is for).
// Every injected error carries the path (and offset for reads), as the
// POSIX env's errors do. Counters: reads(), commits(), bytes_appended().
//
// Thread safety: as the wrapped Env; the counters are atomic.
// Lifetime: `base` must outlive the FaultEnv; sources and sinks must not
// outlive either.
#ifndef ZEROFOLD_IO_FAULT_ENV_H_
#define ZEROFOLD_IO_FAULT_ENV_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::io {

class FaultEnv final : public Env {
 public:
  explicit FaultEnv(Env* base) : base_(base) {}
  FaultEnv(const FaultEnv&) = delete;
  FaultEnv& operator=(const FaultEnv&) = delete;

  static constexpr uint64_t kNever = UINT64_MAX;

  void FailRead(uint64_t n) { fail_read_ = n; }
  void TruncateReadsAt(uint64_t k) { truncate_at_ = k; }
  void SetStreamChunk(size_t n) { stream_chunk_ = n; }
  void SetSpace(uint64_t k) { space_ = k; }
  void FailCommit(uint64_t n) { fail_commit_ = n; }
  void SetFreeBytes(uint64_t k) { free_bytes_ = k; }
  void FlipWrittenByte(uint64_t k) { flip_at_ = k; }
  // Turns every fault off and zeroes the counters.
  void Reset();

  uint64_t reads() const { return reads_; }
  uint64_t commits() const { return commits_; }
  uint64_t bytes_appended() const { return appended_; }

  // Env.
  Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) override;
  Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) override;
  std::vector<std::string> TakeRemovedTempFiles() override { return base_->TakeRemovedTempFiles(); }
  Result<std::unique_ptr<Sink>> StdoutSink() override { return base_->StdoutSink(); }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override { return base_->ListDir(path); }
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) override;
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RemoveDir(const std::string& path) override { return base_->RemoveDir(path); }
  Result<uint64_t> FreeBytes(const std::string& path) override {
    return free_bytes_ == kNever ? base_->FreeBytes(path) : Result<uint64_t>(free_bytes_.load());
  }
  Result<FileId> GetFileId(const std::string& path) override { return base_->GetFileId(path); }

 private:
  class Source;
  class Stream;
  class AtomicSink;

  // Counts a read; the injected error if it is the one to fail.
  Status CountRead(const std::string& name, uint64_t offset);

  Env* base_;
  std::atomic<uint64_t> fail_read_{0};
  std::atomic<uint64_t> truncate_at_{kNever};
  std::atomic<size_t> stream_chunk_{0};
  std::atomic<uint64_t> space_{0};
  std::atomic<uint64_t> fail_commit_{0};
  std::atomic<uint64_t> free_bytes_{kNever};
  std::atomic<uint64_t> flip_at_{kNever};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> appended_{0};
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_FAULT_ENV_H_
