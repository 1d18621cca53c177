#include "io/fault_env.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "io/mem_env.h"

namespace zerofold::io {

class FaultEnv::Source final : public RandomSource {
 public:
  Source(FaultEnv* env, std::unique_ptr<RandomSource> base) : env_(env), base_(std::move(base)) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    ZF_TRY(env_->CountRead(name(), offset));
    const uint64_t cut = env_->truncate_at_;
    if (offset >= cut) return size_t{0};
    if (dst.size() > cut - offset) dst = dst.first(static_cast<size_t>(cut - offset));
    return base_->ReadAt(offset, dst);
  }
  uint64_t size() const override { return base_->size(); }
  const std::string& name() const override { return base_->name(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<RandomSource> base_;
};

class FaultEnv::Stream final : public StreamSource {
 public:
  Stream(FaultEnv* env, std::unique_ptr<StreamSource> base) : env_(env), base_(std::move(base)) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    ZF_TRY(env_->CountRead(name(), position()));
    const size_t chunk = env_->stream_chunk_;
    if (chunk != 0 && dst.size() > chunk) dst = dst.first(chunk);
    return base_->Read(dst);
  }
  uint64_t position() const override { return base_->position(); }
  const std::string& name() const override { return base_->name(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<StreamSource> base_;
};

class FaultEnv::AtomicSink final : public AtomicFileSink {
 public:
  AtomicSink(FaultEnv* env, std::unique_ptr<AtomicFileSink> base) : env_(env), base_(std::move(base)) {}
  Status Append(std::span<const std::byte> data) override {
    std::vector<std::byte> flipped;
    if (const uint64_t at = base_->position(), flip = env_->flip_at_;
        flip != kNever && flip >= at && flip - at < data.size()) {
      flipped.assign(data.begin(), data.end());
      flipped[flip - at] = ~flipped[flip - at];
      data = flipped;
    }
    const uint64_t space = env_->space_;
    if (space != 0) {
      const uint64_t used = env_->appended_;
      const uint64_t room = used >= space ? 0 : space - used;
      if (data.size() > room) {
        if (room > 0) {
          ZF_TRY(base_->Append(data.first(static_cast<size_t>(room))));
          env_->appended_ += room;
        }
        return Status::IOError("write: No space left on device (injected: disk of " + std::to_string(space) +
                               " bytes)")
            .WithPath(name());
      }
    }
    ZF_TRY(base_->Append(data));
    env_->appended_ += data.size();
    return Status::OK();
  }
  Status Flush() override { return base_->Flush(); }
  uint64_t position() const override { return base_->position(); }
  const std::string& name() const override { return base_->name(); }
  Status Commit() override {
    const uint64_t n = ++env_->commits_;
    if (env_->fail_commit_ != 0 && n == env_->fail_commit_)
      return Status::IOError("rename: injected failure (commit #" + std::to_string(n) + ")").WithPath(name());
    return base_->Commit();
  }
  Status Close() override { return base_->Close(); }
  // Reads of the written bytes count, and fail, as every other read.
  Result<std::unique_ptr<RandomSource>> OpenWritten() override {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> base, base_->OpenWritten());
    return std::unique_ptr<RandomSource>(new Source(env_, std::move(base)));
  }

 private:
  FaultEnv* env_;
  std::unique_ptr<AtomicFileSink> base_;
};

void FaultEnv::Reset() {
  fail_read_ = 0;
  truncate_at_ = kNever;
  stream_chunk_ = 0;
  free_bytes_ = kNever;
  flip_at_ = kNever;
  space_ = 0;
  fail_commit_ = 0;
  reads_ = 0;
  commits_ = 0;
  appended_ = 0;
}

Status FaultEnv::CountRead(const std::string& name, uint64_t offset) {
  const uint64_t n = ++reads_;
  if (fail_read_ != 0 && n == fail_read_)
    return Status::IOError("read: injected failure (read #" + std::to_string(n) + ")").WithPath(name).WithOffset(offset);
  return Status::OK();
}

Result<std::unique_ptr<RandomSource>> FaultEnv::OpenRandom(const std::string& path) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> base, base_->OpenRandom(path));
  return std::unique_ptr<RandomSource>(new Source(this, std::move(base)));
}

Result<std::unique_ptr<StreamSource>> FaultEnv::OpenStream(const std::string& path) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<StreamSource> base, base_->OpenStream(path));
  return std::unique_ptr<StreamSource>(new Stream(this, std::move(base)));
}

Result<std::unique_ptr<AtomicFileSink>> FaultEnv::NewAtomicFile(const std::string& path) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> base, base_->NewAtomicFile(path));
  return std::unique_ptr<AtomicFileSink>(new AtomicSink(this, std::move(base)));
}

Result<std::string> FaultEnv::ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  // Through this env's sources, so read faults reach small files too.
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, OpenRandom(path));
  return ReadWholeSource(*src, max_bytes);
}

}  // namespace zerofold::io
