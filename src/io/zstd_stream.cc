#include "io/zstd_stream.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "io/cursor.h"

namespace zerofold::io {
namespace {

constexpr std::string_view kDecompressedNote = "in .zst input, offset ";

std::string ZstdErrorText(size_t ret) { return ZSTD_getErrorName(ret); }

// A StreamSource that first returns bytes already read from `inner`, then
// the rest of inner: how standard input is sniffed for a zstd frame.
class PrefixedSource final : public StreamSource {
 public:
  PrefixedSource(std::unique_ptr<StreamSource> inner, std::vector<std::byte> prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix)) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    if (used_ < prefix_.size()) {
      size_t n = std::min(dst.size(), prefix_.size() - used_);
      std::memcpy(dst.data(), prefix_.data() + used_, n);
      used_ += n;
      return n;
    }
    return inner_->Read(dst);
  }
  uint64_t position() const override { return inner_->position() - (prefix_.size() - used_); }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::unique_ptr<StreamSource> inner_;
  std::vector<std::byte> prefix_;
  size_t used_ = 0;
};

class FileOutput final : public NamedOutput {
 public:
  explicit FileOutput(std::unique_ptr<AtomicFileSink> file) : file_(std::move(file)) {}
  Sink* sink() override { return file_.get(); }
  Status Close() override { return file_->Close(); }
  Status Commit() override { return file_->Commit(); }
  Result<std::unique_ptr<RandomSource>> OpenWritten() override { return file_->OpenWritten(); }
  uint64_t stored_bytes() const override { return file_->position(); }

 private:
  std::unique_ptr<AtomicFileSink> file_;
};

class ZstdFileOutput final : public NamedOutput {
 public:
  ZstdFileOutput(std::unique_ptr<AtomicFileSink> file, std::unique_ptr<ZstdSink> zstd)
      : file_(std::move(file)), zstd_(std::move(zstd)) {}
  Sink* sink() override { return zstd_.get(); }
  Status Close() override {
    ZF_TRY(zstd_->Finish());
    return file_->Close();
  }
  Status Commit() override {
    ZF_TRY(zstd_->Finish());
    return file_->Commit();
  }
  uint64_t stored_bytes() const override { return file_->position(); }

 private:
  std::unique_ptr<AtomicFileSink> file_;  // destroyed after zstd_, which points at it
  std::unique_ptr<ZstdSink> zstd_;
};

class StdoutOutput final : public NamedOutput {
 public:
  explicit StdoutOutput(std::unique_ptr<Sink> out) : out_(std::move(out)) {}
  Sink* sink() override { return out_.get(); }
  Status Commit() override { return out_->Flush(); }
  uint64_t stored_bytes() const override { return out_->position(); }

 private:
  std::unique_ptr<Sink> out_;
};

Status WithMessage(const Status& s, std::string message) {
  if (s.ok()) return s;
  Status out = Status::Of(s.code(), std::move(message));
  if (!s.path().empty()) out.WithPath(s.path());
  if (!s.record().empty()) out.WithRecord(s.record());
  if (s.offset() != kNoOffset) out.WithOffset(s.offset());
  return out;
}

}  // namespace

// ---- ZstdSource ----

struct ZstdSource::Context {
  ZSTD_DCtx* dctx = nullptr;
  ~Context() { ZSTD_freeDCtx(dctx); }
};

ZstdSource::ZstdSource(std::unique_ptr<StreamSource> inner, std::unique_ptr<Context> ctx, int window_log_max)
    : inner_(std::move(inner)), ctx_(std::move(ctx)), window_log_max_(window_log_max), in_(ZSTD_DStreamInSize()) {}

ZstdSource::~ZstdSource() = default;

Result<std::unique_ptr<ZstdSource>> ZstdSource::Open(std::unique_ptr<StreamSource> inner,
                                                     const ZstdOptions& options) {
  auto ctx = std::make_unique<Context>();
  ctx->dctx = ZSTD_createDCtx();
  if (ctx->dctx == nullptr) return Status::Internal("cannot create a zstd decompression context");
  size_t r = ZSTD_DCtx_setParameter(ctx->dctx, ZSTD_d_windowLogMax, options.window_log_max);
  if (ZSTD_isError(r))
    return Status::InvalidArgument("zstd window log " + std::to_string(options.window_log_max) +
                                   " is out of range: " + ZstdErrorText(r));
  return std::unique_ptr<ZstdSource>(new ZstdSource(std::move(inner), std::move(ctx), options.window_log_max));
}

Status ZstdSource::Error(Code code, const std::string& why) const {
  std::string message = why + ", " + std::string(kDecompressedNote) + std::to_string(position_) +
                        " of the decompressed stream (compressed offset " +
                        std::to_string(compressed_position_) + ")";
  Status s = code == Code::kLimit ? Status::Limit(std::move(message)) : Status::Corrupt(std::move(message));
  s.WithOffset(position_).WithPath(inner_->name());
  return s;
}

Result<size_t> ZstdSource::Read(std::span<std::byte> dst) {
  if (failed_) return Status::Internal("read from a zstd source after an error").WithPath(inner_->name());
  if (dst.empty()) return size_t{0};
  while (true) {
    if (in_pos_ == in_end_ && !inner_done_) {
      Result<size_t> got = inner_->Read(in_);
      if (!got.ok()) {
        failed_ = true;
        return got.status();
      }
      in_pos_ = 0;
      in_end_ = *got;
      inner_done_ = *got == 0;
    }
    if (in_pos_ == in_end_ && inner_done_) {
      if (!in_frame_ && any_frame_) return size_t{0};  // end of the last frame
      failed_ = true;
      return Error(Code::kCorrupt, any_frame_ ? "truncated: the stream ends inside a zstd frame"
                                              : "truncated: the stream holds no zstd frame");
    }
    ZSTD_inBuffer in{in_.data(), in_end_, in_pos_};
    ZSTD_outBuffer out{dst.data(), dst.size(), 0};
    const size_t ret = ZSTD_decompressStream(ctx_->dctx, &out, &in);
    if (ZSTD_isError(ret)) {
      failed_ = true;
      const bool window = ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge;
      return Error(window ? Code::kLimit : Code::kCorrupt,
                   window ? "a zstd frame needs a window larger than 2^" + std::to_string(window_log_max_) +
                                " bytes (--zstd-window-log-max)"
                          : "zstd: " + ZstdErrorText(ret));
    }
    compressed_position_ += in.pos - in_pos_;
    if (in.pos > in_pos_) any_frame_ = true;
    in_pos_ = in.pos;
    // 0: a frame is complete and fully flushed; anything else: more to come.
    in_frame_ = ret != 0;
    if (out.pos > 0) {
      position_ += out.pos;
      return out.pos;
    }
  }
}

// ---- ZstdSink ----

struct ZstdSink::Context {
  ZSTD_CCtx* cctx = nullptr;
  ~Context() { ZSTD_freeCCtx(cctx); }
};

ZstdSink::ZstdSink(Sink* inner, std::unique_ptr<Context> ctx)
    : inner_(inner), ctx_(std::move(ctx)), out_(ZSTD_CStreamOutSize()) {}

ZstdSink::~ZstdSink() = default;

Result<std::unique_ptr<ZstdSink>> ZstdSink::Open(Sink* inner, const ZstdOptions& options) {
  auto ctx = std::make_unique<Context>();
  ctx->cctx = ZSTD_createCCtx();
  if (ctx->cctx == nullptr) return Status::Internal("cannot create a zstd compression context");
  const ZSTD_bounds levels = ZSTD_cParam_getBounds(ZSTD_c_compressionLevel);
  if (options.level < 1 || options.level > levels.upperBound)
    return Status::InvalidArgument("zstd level " + std::to_string(options.level) + " is not in 1.." +
                                   std::to_string(levels.upperBound));
  if (options.workers < 0 || options.workers > 256)
    return Status::InvalidArgument("zstd workers " + std::to_string(options.workers) + " is not in 0..256");
  size_t r = ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_compressionLevel, options.level);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_checksumFlag, 1);
  // The size is not known when the frame header is written; say nothing.
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_contentSizeFlag, 0);
  if (!ZSTD_isError(r) && options.workers > 0)
    r = ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_nbWorkers, options.workers);
  if (ZSTD_isError(r))
    return Status::InvalidArgument("zstd refuses the compression parameters: " + ZstdErrorText(r));
  return std::unique_ptr<ZstdSink>(new ZstdSink(inner, std::move(ctx)));
}

// Feeds `data` to zstd with end directive `mode` and writes what comes out,
// until zstd has taken all of it and, for flush and end, emptied its buffers.
Status ZstdSink::Drive(std::span<const std::byte> data, int mode) {
  const auto directive = static_cast<ZSTD_EndDirective>(mode);
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  while (true) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const size_t ret = ZSTD_compressStream2(ctx_->cctx, &out, &in, directive);
    if (ZSTD_isError(ret))
      return Status::Internal("zstd compression failed: " + ZstdErrorText(ret)).WithPath(inner_->name());
    if (out.pos > 0) ZF_TRY(inner_->Append(std::span<const std::byte>(out_.data(), out.pos)));
    const bool taken = in.pos == in.size;
    if (directive == ZSTD_e_continue ? taken : (taken && ret == 0)) return Status::OK();
  }
}

Status ZstdSink::Append(std::span<const std::byte> data) {
  if (finished_) return Status::Internal("append after the zstd frame was finished").WithPath(inner_->name());
  ZF_TRY(Drive(data, ZSTD_e_continue));
  position_ += data.size();
  return Status::OK();
}

Status ZstdSink::Flush() {
  if (finished_) return inner_->Flush();
  ZF_TRY(Drive({}, ZSTD_e_flush));
  return inner_->Flush();
}

Status ZstdSink::Finish() {
  if (finished_) return Status::OK();
  ZF_TRY(Drive({}, ZSTD_e_end));
  finished_ = true;
  return inner_->Flush();
}

Status SetZstdOption(ZstdOptions* options, std::string_view name, uint64_t value) {
  struct Option {
    std::string_view name;
    int low, high;
    int ZstdOptions::*field;
  };
  static constexpr Option kOptions[] = {{"zstd-level", 1, 19, &ZstdOptions::level},
                                        {"zstd-threads", 0, 256, &ZstdOptions::workers},
                                        {"zstd-window-log-max", 10, 31, &ZstdOptions::window_log_max}};
  for (const Option& o : kOptions) {
    if (o.name != name) continue;
    if (value < static_cast<uint64_t>(o.low) || value > static_cast<uint64_t>(o.high))
      return Status::InvalidArgument(std::string(name) + " needs a number from " + std::to_string(o.low) + " to " +
                                     std::to_string(o.high));
    options->*o.field = static_cast<int>(value);
    return Status::OK();
  }
  return Status::NotFound("no zstd option named " + std::string(name));
}

// ---- Opening by name ----

bool IsZstdName(std::string_view name) { return name.size() > kZstdSuffix.size() && name.ends_with(kZstdSuffix); }

bool IsStreamName(std::string_view name) { return name == kStdioName || IsZstdName(name); }

Result<std::unique_ptr<StreamSource>> OpenNamedInput(Env* env, const std::string& name,
                                                     const ZstdOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<StreamSource> raw, env->OpenStream(name));
  if (IsZstdName(name)) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<ZstdSource> z, ZstdSource::Open(std::move(raw), options));
    return std::unique_ptr<StreamSource>(std::move(z));
  }
  if (name != kStdioName) return raw;
  // Standard input has no name to go by: look at its first bytes. Neither
  // a zip archive ("PK") nor a pickle (PROTO 0x80, or an opcode) starts
  // with the zstd magic.
  std::vector<std::byte> head(sizeof(uint32_t));
  size_t have = 0;
  while (have < head.size()) {
    ZF_ASSIGN_OR_RETURN(size_t got, raw->Read(std::span<std::byte>(head).subspan(have)));
    if (got == 0) break;
    have += got;
  }
  head.resize(have);
  const bool zstd = have == sizeof(uint32_t) && DecodeU32le(head.data()) == kZstdFrameMagic;
  auto prefixed = std::make_unique<PrefixedSource>(std::move(raw), std::move(head));
  if (!zstd) return std::unique_ptr<StreamSource>(std::move(prefixed));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<ZstdSource> z, ZstdSource::Open(std::move(prefixed), options));
  return std::unique_ptr<StreamSource>(std::move(z));
}

Result<std::unique_ptr<NamedOutput>> OpenNamedOutput(Env* env, const std::string& name,
                                                     const ZstdOptions& options) {
  if (name == kStdioName) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<Sink> out, env->StdoutSink());
    return std::unique_ptr<NamedOutput>(new StdoutOutput(std::move(out)));
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> file, env->NewAtomicFile(name));
  if (!IsZstdName(name)) return std::unique_ptr<NamedOutput>(new FileOutput(std::move(file)));
  Result<std::unique_ptr<ZstdSink>> zstd = ZstdSink::Open(file.get(), options);
  if (!zstd.ok()) return Status(zstd.status()).WithPath(name);
  return std::unique_ptr<NamedOutput>(new ZstdFileOutput(std::move(file), std::move(*zstd)));
}

Status NoteDecompressedOffset(Status status, const StreamSource& input) {
  if (status.ok() || status.offset() == kNoOffset) return status;
  if (dynamic_cast<const ZstdSource*>(&input) == nullptr) return status;
  if (!status.path().empty() && status.path() != input.name()) return status;
  if (status.message().find(kDecompressedNote) != std::string::npos) return status;
  return WithMessage(status, status.message() + "; " + std::string(kDecompressedNote) +
                                 std::to_string(status.offset()) + " of the decompressed stream");
}

}  // namespace zerofold::io
