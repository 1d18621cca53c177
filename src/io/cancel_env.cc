#include "io/cancel_env.h"

#include <utility>

namespace zerofold::io {

Status CancelEnv::Check(const std::string& name) const {
  const int value = flag_->load(std::memory_order_relaxed);
  if (value == 0) return Status::OK();
  return Status::Cancelled(why_(value)).WithPath(name);
}

class CancelEnv::Source final : public RandomSource {
 public:
  Source(const CancelEnv* env, std::unique_ptr<RandomSource> base) : env_(env), base_(std::move(base)) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    ZF_TRY(env_->Check(name()));
    return base_->ReadAt(offset, dst);
  }
  void WillNeed(uint64_t offset, uint64_t length) const override { base_->WillNeed(offset, length); }
  uint64_t size() const override { return base_->size(); }
  const std::string& name() const override { return base_->name(); }

 private:
  const CancelEnv* env_;
  std::unique_ptr<RandomSource> base_;
};

class CancelEnv::Stream final : public StreamSource {
 public:
  Stream(const CancelEnv* env, std::unique_ptr<StreamSource> base) : env_(env), base_(std::move(base)) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    ZF_TRY(env_->Check(name()));
    return base_->Read(dst);
  }
  Status Skip(uint64_t n) override {
    ZF_TRY(env_->Check(name()));
    return base_->Skip(n);
  }
  uint64_t position() const override { return base_->position(); }
  const std::string& name() const override { return base_->name(); }

 private:
  const CancelEnv* env_;
  std::unique_ptr<StreamSource> base_;
};

namespace {

// Appends and flushes of a sink of type `S` stop once the flag is set.
template <typename S>
class CheckedSink : public S {
 public:
  CheckedSink(const CancelEnv* env, std::unique_ptr<S> base) : env_(env), base_(std::move(base)) {}
  Status Append(std::span<const std::byte> data) override {
    ZF_TRY(env_->Check(this->name()));
    return base_->Append(data);
  }
  Status Flush() override {
    ZF_TRY(env_->Check(this->name()));
    return base_->Flush();
  }
  uint64_t position() const override { return base_->position(); }
  const std::string& name() const override { return base_->name(); }

 protected:
  const CancelEnv* env_;
  std::unique_ptr<S> base_;
};

}  // namespace

class CancelEnv::Output final : public CheckedSink<Sink> {
 public:
  using CheckedSink::CheckedSink;
};

class CancelEnv::AtomicSink final : public CheckedSink<AtomicFileSink> {
 public:
  using CheckedSink::CheckedSink;
  Status Close() override {
    ZF_TRY(env_->Check(name()));
    return base_->Close();
  }
  // The last chance to stop: after it the target is replaced.
  Status Commit() override {
    ZF_TRY(env_->Check(name()));
    return base_->Commit();
  }
  Result<std::unique_ptr<RandomSource>> OpenWritten() override {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> base, base_->OpenWritten());
    return std::unique_ptr<RandomSource>(new Source(env_, std::move(base)));
  }
};

Result<std::unique_ptr<RandomSource>> CancelEnv::OpenRandom(const std::string& path) {
  ZF_TRY(Check(path));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> base, base_->OpenRandom(path));
  return std::unique_ptr<RandomSource>(new Source(this, std::move(base)));
}

Result<std::unique_ptr<StreamSource>> CancelEnv::OpenStream(const std::string& path) {
  ZF_TRY(Check(path));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<StreamSource> base, base_->OpenStream(path));
  return std::unique_ptr<StreamSource>(new Stream(this, std::move(base)));
}

Result<std::unique_ptr<AtomicFileSink>> CancelEnv::NewAtomicFile(const std::string& path) {
  ZF_TRY(Check(path));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> base, base_->NewAtomicFile(path));
  return std::unique_ptr<AtomicFileSink>(new AtomicSink(this, std::move(base)));
}

Result<std::unique_ptr<Sink>> CancelEnv::StdoutSink() {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<Sink> base, base_->StdoutSink());
  return std::unique_ptr<Sink>(new Output(this, std::move(base)));
}

}  // namespace zerofold::io
