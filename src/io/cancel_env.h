// CancelEnv: the cancellation token, checked at the I/O seam.
//
// Every job reads and writes through its Env. A CancelEnv wraps another Env
// and, once its flag is set, makes the next read (RandomSource::ReadAt,
// StreamSource::Read), write (Sink::Append, Flush), commit
// (AtomicFileSink::Commit) or open of a source or sink fail with
// kCancelled. The job then unwinds through its ordinary failure path: sinks
// destroyed uncommitted remove their temp files, and a folder run removes
// the files it had committed (output/target.h OutputRollback), so a cancelled run
// leaves what a failed one leaves.
//
// Not checked: listing, existence tests, small-file reads of metadata
// (bounded and fast), free space, and RemoveFile and RemoveDir, which the
// unwinding itself uses.
//
// The flag is a lock-free atomic: a signal handler (cli/signals.h) or
// another thread (the C API's progress callback) may set it at any time.
//
// Thread safety: as the wrapped Env. Lifetime: `base` and `flag` must
// outlive the CancelEnv; sources and sinks must not outlive either.
#ifndef ZEROFOLD_IO_CANCEL_ENV_H_
#define ZEROFOLD_IO_CANCEL_ENV_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::io {

// 0 while the run may go on; any other value stops it (the value is the
// reason: a signal number for the CLI, 1 for a caller's request).
using CancelFlag = std::atomic<int>;
static_assert(CancelFlag::is_always_lock_free, "set from signal handlers");

class CancelEnv final : public Env {
 public:
  // `why` words the kCancelled message for a flag value.
  CancelEnv(Env* base, const CancelFlag* flag, std::string (*why)(int value))
      : base_(base), flag_(flag), why_(why) {}
  CancelEnv(const CancelEnv&) = delete;
  CancelEnv& operator=(const CancelEnv&) = delete;

  // OK while the flag is 0; else kCancelled with path `name`.
  Status Check(const std::string& name) const;

  // Env.
  Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) override;
  Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) override;
  std::vector<std::string> TakeRemovedTempFiles() override { return base_->TakeRemovedTempFiles(); }
  Result<std::unique_ptr<Sink>> StdoutSink() override;
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override { return base_->ListDir(path); }
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) override {
    return base_->ReadSmallFile(path, max_bytes);
  }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RemoveDir(const std::string& path) override { return base_->RemoveDir(path); }
  Result<uint64_t> FreeBytes(const std::string& path) override { return base_->FreeBytes(path); }
  Result<FileId> GetFileId(const std::string& path) override { return base_->GetFileId(path); }

 private:
  class Source;
  class Stream;
  class Output;
  class AtomicSink;

  Env* base_;
  const CancelFlag* flag_;
  std::string (*why_)(int value);
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_CANCEL_ENV_H_
