#include "capi/callback_env.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "io/coalescing_source.h"
#include "io/mem_env.h"

namespace zerofold::capi {

namespace {

// The buffer a callback writes its reason into.
struct Why {
  char text[1024] = {};
};

// A callback's error code as a Status: the codes the library's Code shares
// (zerofold.h), and ZF_E_IO for any other (ZF_E_NOMEM, a value of the
// caller's own).
Status CodeStatus(int code, std::string message) {
  switch (code) {
    case ZF_E_CORRUPT:
    case ZF_E_UNSUPPORTED:
    case ZF_E_UNSAFE:
    case ZF_E_LIMIT:
    case ZF_E_INVALID_ARGUMENT:
    case ZF_E_NOT_FOUND:
    case ZF_E_INTERNAL:
    case ZF_CANCELLED:
    case ZF_E_AMBIGUOUS: return Status::Of(static_cast<Code>(code), std::move(message));
    default: return Status::IOError(std::move(message));
  }
}

Status Failure(int code, const Why& why, const char* callback, const std::string& name) {
  return CallbackFailure(code, why.text, callback, name);
}

// FNV-1a of a name: the identity of a file of the caller's (GetFileId).
uint64_t NameId(const std::string& name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A file of the caller's, read at random offsets.
class CallbackSource final : public RandomSource {
 public:
  CallbackSource(const zf_env::Side& side, std::string name, void* file, uint64_t size)
      : side_(side), name_(std::move(name)), file_(file), size_(size) {}
  ~CallbackSource() override { side_.ops.close(side_.user, file_); }

  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    size_t done = 0;
    while (done < dst.size() && offset + done < size_) {
      Why why;
      size_t got = 0;
      const size_t want = dst.size() - done;
      int code = side_.ops.read_at(side_.user, file_, offset + done, dst.data() + done, want, &got, why.text,
                                   sizeof why.text);
      if (code != ZF_OK) return Failure(code, why, "read_at", name_).WithOffset(offset + done);
      if (got > want)
        return Status::Internal("read_at returned " + std::to_string(got) + " bytes, asked for " + std::to_string(want))
            .WithPath(name_)
            .WithOffset(offset + done);
      if (got == 0) break;
      done += got;
    }
    return done;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  const zf_env::Side& side_;
  const std::string name_;
  void* const file_;
  const uint64_t size_;
};

// The same file read front to back.
class CallbackStream final : public StreamSource {
 public:
  explicit CallbackStream(std::unique_ptr<RandomSource> src) : src_(std::move(src)) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    ZF_ASSIGN_OR_RETURN(size_t n, src_->ReadAt(position_, dst));
    position_ += n;
    return n;
  }
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return src_->name(); }

 private:
  std::unique_ptr<RandomSource> src_;
  uint64_t position_ = 0;
};

// An output file of the caller's, written front to back.
class CallbackSink final : public AtomicFileSink {
 public:
  CallbackSink(const zf_env::Side& side, std::string name, void* file)
      : side_(side), name_(std::move(name)), file_(file) {}
  ~CallbackSink() override {
    if (!committed_) side_.ops.abort(side_.user, file_);
  }
  Status Append(std::span<const std::byte> data) override {
    if (committed_) return Status::Internal("append after commit").WithPath(name_);
    if (data.empty()) return Status::OK();
    Why why;
    int code = side_.ops.write(side_.user, file_, data.data(), data.size(), why.text, sizeof why.text);
    if (code != ZF_OK) return Failure(code, why, "write", name_).WithOffset(position_);
    position_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return name_; }
  Status Commit() override {
    if (committed_) return Status::Internal("commit twice").WithPath(name_);
    Why why;
    int code = side_.ops.commit(side_.user, file_, why.text, sizeof why.text);
    if (code != ZF_OK) return Failure(code, why, "commit", name_);
    committed_ = true;
    return Status::OK();
  }
  Result<std::unique_ptr<RandomSource>> OpenWritten() override {
    return Status::InvalidArgument(
               "output callbacks take each file once, front to back: it cannot be read back before its commit "
               "(verify needs the operating system's files as outputs)")
        .WithPath(name_);
  }

 private:
  const zf_env::Side& side_;
  const std::string name_;
  void* const file_;
  uint64_t position_ = 0;
  bool committed_ = false;
};

}  // namespace

Status CallbackFailure(int code, const char* why, const char* callback, const std::string& name) {
  std::string message = why != nullptr ? std::string(why, strnlen(why, 1023)) : std::string();
  if (message.empty()) message = std::string(callback) + " failed";
  if (code == ZF_OK) message = std::string(callback) + " returned ZF_OK where it had failed";
  return CodeStatus(code == ZF_OK ? ZF_E_INTERNAL : code, std::move(message)).WithPath(name);
}

CallbackEnv::CallbackEnv(const zf_env& env, Env* base, std::string out) : env_(env), base_(base), out_(std::move(out)) {
  while (out_.size() > 1 && out_.back() == '/') out_.pop_back();
}

const zf_env::Side* CallbackEnv::SideOf(const std::string& path) const {
  const bool output = !out_.empty() && path.compare(0, out_.size(), out_) == 0 &&
                      (path.size() == out_.size() || path[out_.size()] == '/');
  const std::optional<zf_env::Side>& side = output ? env_.outputs : env_.inputs;
  return side ? &*side : nullptr;
}

Result<zf_entry_kind> CallbackEnv::Kind(const zf_env::Side& side, const std::string& path, uint64_t* size) const {
  Why why;
  zf_entry_kind kind = ZF_ENTRY_NONE;
  uint64_t bytes = 0;
  int code = side.ops.stat(side.user, path.c_str(), &kind, &bytes, why.text, sizeof why.text);
  if (code != ZF_OK) return Failure(code, why, "stat", path);
  if (size != nullptr) *size = bytes;
  return kind;
}

Result<std::unique_ptr<RandomSource>> CallbackEnv::OpenRandom(const std::string& path) {
  const zf_env::Side* side = SideOf(path);
  if (side == nullptr) return base_->OpenRandom(path);
  if (side->ops.open == nullptr)
    return Status::InvalidArgument("the output callbacks have no open: outputs cannot be read back").WithPath(path);
  Why why;
  void* file = nullptr;
  uint64_t size = 0;
  int code = side->ops.open(side->user, path.c_str(), &file, &size, why.text, sizeof why.text);
  if (code != ZF_OK) return Failure(code, why, "open", path);
  // Each read_at is a request (a ranged GET): small reads are coalesced.
  return std::unique_ptr<RandomSource>(
      new io::CoalescingSource(std::unique_ptr<RandomSource>(new CallbackSource(*side, path, file, size))));
}

Result<std::unique_ptr<StreamSource>> CallbackEnv::OpenStream(const std::string& path) {
  if (SideOf(path) == nullptr) return base_->OpenStream(path);
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, OpenRandom(path));
  return std::unique_ptr<StreamSource>(new CallbackStream(std::move(src)));
}

Result<std::unique_ptr<AtomicFileSink>> CallbackEnv::NewAtomicFile(const std::string& path) {
  const zf_env::Side* side = Outputs();
  if (side == nullptr) return base_->NewAtomicFile(path);
  Why why;
  void* file = nullptr;
  int code = side->ops.create(side->user, path.c_str(), &file, why.text, sizeof why.text);
  if (code != ZF_OK) return Failure(code, why, "create", path);
  return std::unique_ptr<AtomicFileSink>(new CallbackSink(*side, path, file));
}

Result<std::unique_ptr<Sink>> CallbackEnv::StdoutSink() {
  if (Outputs() != nullptr)
    return Status::InvalidArgument("'-' is standard output; with output callbacks, name the output file");
  return base_->StdoutSink();
}

bool CallbackEnv::FileExists(const std::string& path) {
  const zf_env::Side* side = SideOf(path);
  if (side == nullptr) return base_->FileExists(path);
  Result<zf_entry_kind> kind = Kind(*side, path, nullptr);
  return kind.ok() && *kind != ZF_ENTRY_NONE;
}

bool CallbackEnv::IsDirectory(const std::string& path) {
  const zf_env::Side* side = SideOf(path);
  if (side == nullptr) return base_->IsDirectory(path);
  Result<zf_entry_kind> kind = Kind(*side, path, nullptr);
  return kind.ok() && *kind == ZF_ENTRY_FOLDER;
}

Result<std::vector<DirEntry>> CallbackEnv::ListDir(const std::string& path) {
  const zf_env::Side* side = SideOf(path);
  if (side == nullptr) return base_->ListDir(path);
  if (side->ops.list == nullptr)
    return Status::Unsupported("the callbacks have no list, which folders need").WithPath(path);
  std::vector<DirEntry> entries;
  auto add = [](void* list, const char* name, zf_entry_kind kind) {
    if (name == nullptr || *name == '\0' || std::strchr(name, '/') != nullptr) return;
    static_cast<std::vector<DirEntry>*>(list)->push_back({name, kind == ZF_ENTRY_FOLDER});
  };
  Why why;
  int code = side->ops.list(side->user, path.c_str(), add, &entries, why.text, sizeof why.text);
  if (code != ZF_OK) return Failure(code, why, "list", path);
  return entries;
}

Status CallbackEnv::CreateDirs(const std::string& path) {
  // The caller's store makes folders from names, as object stores do.
  if (Outputs() != nullptr) return Status::OK();
  return base_->CreateDirs(path);
}

Result<std::string> CallbackEnv::ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  if (SideOf(path) == nullptr) return base_->ReadSmallFile(path, max_bytes);
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, OpenRandom(path));
  return io::ReadWholeSource(*src, max_bytes);
}

Status CallbackEnv::RemoveFile(const std::string& path) {
  const zf_env::Side* side = Outputs();
  if (side == nullptr) return base_->RemoveFile(path);
  Why why;
  int code = side->ops.remove(side->user, path.c_str(), why.text, sizeof why.text);
  if (code != ZF_OK) return Failure(code, why, "remove", path);
  return Status::OK();
}

Status CallbackEnv::RemoveDir(const std::string& path) {
  // Folders of the caller's store are names (CreateDirs): none to remove.
  if (Outputs() != nullptr) return Status::OK();
  return base_->RemoveDir(path);
}

Result<uint64_t> CallbackEnv::FreeBytes(const std::string& path) {
  // The caller's store says nothing of its room: the writes will.
  if (Outputs() != nullptr) return Status::Unsupported("free space of the caller's store is unknown").WithPath(path);
  return base_->FreeBytes(path);
}

Result<FileId> CallbackEnv::GetFileId(const std::string& path) {
  const zf_env::Side* side = SideOf(path);
  if (side == nullptr) return base_->GetFileId(path);
  ZF_ASSIGN_OR_RETURN(zf_entry_kind kind, Kind(*side, path, nullptr));
  if (kind == ZF_ENTRY_NONE) return Status::NotFound("no such file").WithPath(path);
  // Names are identities in the caller's store; device 1 keeps them apart
  // from the operating system's files.
  return FileId{1, NameId(path)};
}

}  // namespace zerofold::capi
