#include "io/mem_env.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <optional>
#include <utility>
#include <vector>

namespace zerofold::io {

Result<std::string> ReadWholeSource(const RandomSource& src, uint64_t max_bytes) {
  if (src.size() > max_bytes)
    return Status::Limit("file is " + std::to_string(src.size()) + " bytes, limit " + std::to_string(max_bytes))
        .WithPath(src.name());
  std::string out(static_cast<size_t>(src.size()), '\0');
  ZF_TRY(ReadExactAt(src, 0, std::as_writable_bytes(std::span<char>(out.data(), out.size()))));
  return out;
}

std::string MemEnv::Normalize(const std::string& path) {
  std::string out;
  bool absolute = !path.empty() && path[0] == '/';
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + part;
    i = j + 1;
  }
  if (absolute) return "/" + out;
  return out.empty() ? "." : out;
}

std::string MemEnv::Parent(const std::string& path) {
  std::string norm = Normalize(path);
  size_t slash = norm.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return norm.substr(0, slash);
}

// ---------------------------------------------------------------------------
// Sources and sinks

class MemEnv::Source final : public RandomSource {
 public:
  Source(std::string name, std::shared_ptr<const std::vector<std::byte>> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= bytes_->size()) return size_t{0};
    size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), bytes_->size() - offset));
    if (n) std::memcpy(dst.data(), bytes_->data() + offset, n);
    return n;
  }
  uint64_t size() const override { return bytes_->size(); }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  // A snapshot: a file replaced later gets a new vector, this one stays.
  std::shared_ptr<const std::vector<std::byte>> bytes_;
};

class MemEnv::Stream final : public StreamSource {
 public:
  Stream(MemEnv* env, std::string name, std::shared_ptr<const std::vector<std::byte>> bytes)
      : env_(env), name_(std::move(name)), bytes_(std::move(bytes)) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    if (ended_ && !dst.empty()) env_->Violation(name_ + ": Read after the stream returned 0 (end of stream)");
    size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), bytes_->size() - pos_));
    if (n) std::memcpy(dst.data(), bytes_->data() + pos_, n);
    pos_ += n;
    if (n == 0 && !dst.empty()) ended_ = true;
    return n;
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  MemEnv* env_;
  std::string name_;
  std::shared_ptr<const std::vector<std::byte>> bytes_;
  uint64_t pos_ = 0;
  bool ended_ = false;
};

class MemEnv::AtomicSink final : public AtomicFileSink {
 public:
  AtomicSink(MemEnv* env, std::string target, std::string temp, Bytes bytes)
      : env_(env), target_(std::move(target)), temp_(std::move(temp)), bytes_(std::move(bytes)) {}
  ~AtomicSink() override {
    if (!committed_) env_->Remove(temp_);
  }
  Status Append(std::span<const std::byte> data) override {
    if (committed_) {
      env_->Violation(target_ + ": Append after Commit");
      return Status::Internal("append after commit").WithPath(target_);
    }
    std::lock_guard<std::mutex> lock(env_->mu_);
    bytes_->insert(bytes_->end(), data.begin(), data.end());
    return Status::OK();
  }
  uint64_t position() const override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    return bytes_->size();
  }
  const std::string& name() const override { return target_; }
  Status Commit() override {
    if (committed_) {
      env_->Violation(target_ + ": Commit twice");
      return Status::Internal("commit twice").WithPath(target_);
    }
    ZF_TRY(env_->Rename(temp_, target_));
    committed_ = true;
    return Status::OK();
  }
  Result<std::unique_ptr<RandomSource>> OpenWritten() override {
    if (committed_) {
      env_->Violation(target_ + ": OpenWritten after Commit");
      return Status::Internal("read back after commit").WithPath(target_);
    }
    std::lock_guard<std::mutex> lock(env_->mu_);
    return std::unique_ptr<RandomSource>(new Source(target_, std::make_shared<const std::vector<std::byte>>(*bytes_)));
  }

 private:
  MemEnv* env_;
  std::string target_;
  std::string temp_;
  Bytes bytes_;
  bool committed_ = false;
};

class MemEnv::StdoutSinkImpl final : public Sink {
 public:
  explicit StdoutSinkImpl(MemEnv* env) : env_(env) {}
  Status Append(std::span<const std::byte> data) override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    env_->stdout_.insert(env_->stdout_.end(), data.begin(), data.end());
    pos_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  MemEnv* env_;
  std::string name_ = "<stdout>";
  uint64_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// Test setup and inspection

bool MemEnv::DirExistsLocked(const std::string& norm) const {
  return norm == "." || norm == "/" || dirs_.count(norm) > 0;
}

void MemEnv::CreateDirsLocked(const std::string& norm) {
  for (std::string d = norm; !DirExistsLocked(d); d = Parent(d)) dirs_.insert(d);
}

void MemEnv::PutLocked(const std::string& norm, Bytes bytes) {
  files_[norm] = File{std::move(bytes), next_id_++};
}

void MemEnv::SetFile(const std::string& path, std::vector<std::byte> bytes) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  CreateDirsLocked(Parent(norm));
  PutLocked(norm, std::make_shared<std::vector<std::byte>>(std::move(bytes)));
}

void MemEnv::SetFile(const std::string& path, std::string_view text) {
  std::span<const std::byte> b = std::as_bytes(std::span<const char>(text.data(), text.size()));
  SetFile(path, std::vector<std::byte>(b.begin(), b.end()));
}

std::optional<std::vector<std::byte>> MemEnv::GetFile(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(Normalize(path));
  if (it == files_.end()) return std::nullopt;
  return *it->second.bytes;
}

std::vector<std::string> MemEnv::Files() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, file] : files_) out.push_back(name);
  return out;
}

uint64_t MemEnv::FileId(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(Normalize(path));
  return it == files_.end() ? 0 : it->second.id;
}

bool MemEnv::Link(const std::string& existing, const std::string& link) {
  std::string from = Normalize(existing), to = Normalize(link);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return false;
  CreateDirsLocked(Parent(to));
  files_[to] = it->second;
  return true;
}

Result<zerofold::FileId> MemEnv::GetFileId(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(norm);
  if (it != files_.end()) return zerofold::FileId{0, it->second.id};
  if (!DirExistsLocked(norm)) return Status::NotFound("stat: No such file or directory").WithPath(path);
  auto [dir, fresh] = dir_ids_.emplace(norm, next_id_);
  if (fresh) ++next_id_;
  return zerofold::FileId{0, dir->second};
}

void MemEnv::SetStdin(std::vector<std::byte> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stdin_ = std::move(bytes);
}

std::vector<std::byte> MemEnv::StdoutBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stdout_;
}

std::vector<std::string> MemEnv::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

void MemEnv::Violation(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  violations_.push_back(std::move(what));
}

Status MemEnv::Rename(const std::string& temp, const std::string& target) {
  std::string norm = Normalize(target);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(temp);
  if (it == files_.end()) return Status::IOError("rename: the temp file " + temp + " is gone").WithPath(target);
  if (!DirExistsLocked(Parent(norm))) return Status::NotFound("rename: No such file or directory").WithPath(target);
  if (dirs_.count(norm)) return Status::IOError("rename: Is a directory").WithPath(target);
  Bytes bytes = it->second.bytes;
  files_.erase(it);
  PutLocked(norm, std::move(bytes));
  return Status::OK();
}

void MemEnv::Remove(const std::string& temp) {
  std::lock_guard<std::mutex> lock(mu_);
  files_.erase(temp);
}

// ---------------------------------------------------------------------------
// Env

Result<std::unique_ptr<RandomSource>> MemEnv::OpenRandom(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (dirs_.count(norm) || norm == "." || norm == "/")
    return Status::InvalidArgument("is a folder, not a file").WithPath(path);
  auto it = files_.find(norm);
  if (it == files_.end()) return Status::NotFound("open: No such file or directory").WithPath(path);
  // A copy, so later appends to a temp file do not show through.
  auto snapshot = std::make_shared<const std::vector<std::byte>>(*it->second.bytes);
  return std::unique_ptr<RandomSource>(new Source(path, std::move(snapshot)));
}

Result<std::unique_ptr<StreamSource>> MemEnv::OpenStream(const std::string& path) {
  if (path == "-") {
    std::lock_guard<std::mutex> lock(mu_);
    auto bytes = std::make_shared<const std::vector<std::byte>>(stdin_);
    return std::unique_ptr<StreamSource>(new Stream(this, "<stdin>", std::move(bytes)));
  }
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(norm);
  if (it == files_.end()) return Status::NotFound("open: No such file or directory").WithPath(path);
  auto snapshot = std::make_shared<const std::vector<std::byte>>(*it->second.bytes);
  return std::unique_ptr<StreamSource>(new Stream(this, path, std::move(snapshot)));
}

void MemEnv::SetProcess(uint64_t pid, uint64_t start) {
  std::lock_guard<std::mutex> lock(mu_);
  processes_[pid] = start;
}

std::vector<std::string> MemEnv::TakeRemovedTempFiles() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(removed_, {});
}

Result<std::unique_ptr<AtomicFileSink>> MemEnv::NewAtomicFile(const std::string& path) {
  std::string norm = Normalize(path);
  std::string dir = Parent(norm);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(dir)) return Status::NotFound("create temp file: No such file or directory").WithPath(path);
  const std::string prefix = dir == "." ? "" : dir == "/" ? "/" : dir + "/";
  if (swept_.insert(dir).second) {
    auto probe = [&](uint64_t pid) {
      auto it = processes_.find(pid);
      return it == processes_.end() ? ProcessState{ProcessState::kAbsent, 0}
                                    : ProcessState{ProcessState::kRunning, it->second};
    };
    for (auto it = files_.begin(); it != files_.end();) {
      const std::string& name = it->first;
      std::optional<WriterId> w;
      if (Parent(name) == dir) w = ParseTempFileName(name.substr(prefix.size()));
      if (w && WriterGone(*w, kMemWriter, probe)) {
        removed_.push_back(name);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::string base = norm.substr(norm.rfind('/') == std::string::npos ? 0 : norm.rfind('/') + 1);
  std::string temp = prefix + TempFileName(base, kMemWriter, next_temp_++);
  auto bytes = std::make_shared<std::vector<std::byte>>();
  PutLocked(temp, bytes);
  return std::unique_ptr<AtomicFileSink>(new AtomicSink(this, path, temp, std::move(bytes)));
}

Result<std::unique_ptr<Sink>> MemEnv::StdoutSink() { return std::unique_ptr<Sink>(new StdoutSinkImpl(this)); }

bool MemEnv::FileExists(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  return files_.count(norm) > 0 || DirExistsLocked(norm);
}

bool MemEnv::IsDirectory(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  return DirExistsLocked(norm);
}

Result<std::vector<DirEntry>> MemEnv::ListDir(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(norm)) {
    if (files_.count(norm)) return Status::IOError("open folder: Not a directory").WithPath(path);
    return Status::NotFound("open folder: No such file or directory").WithPath(path);
  }
  std::vector<DirEntry> out;
  auto child = [&](const std::string& p) -> std::optional<std::string> {
    if (p == norm || Parent(p) != norm) return std::nullopt;
    return p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
  };
  for (const auto& [p, file] : files_)
    if (auto name = child(p)) out.push_back({*name, false});
  for (const std::string& d : dirs_)
    if (auto name = child(d)) out.push_back({*name, true});
  return out;
}

Status MemEnv::CreateDirs(const std::string& path) {
  if (path.empty()) return Status::OK();
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  for (std::string d = norm; !DirExistsLocked(d); d = Parent(d))
    if (files_.count(d)) return Status::IOError("mkdir: File exists").WithPath(d);
  CreateDirsLocked(norm);
  return Status::OK();
}

Result<std::string> MemEnv::ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, OpenRandom(path));
  return ReadWholeSource(*src, max_bytes);
}

Status MemEnv::RemoveFile(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.erase(norm) == 0) return Status::NotFound("remove: No such file or directory").WithPath(path);
  return Status::OK();
}

Status MemEnv::RemoveDir(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!dirs_.count(norm)) return Status::NotFound("rmdir: No such file or directory").WithPath(path);
  const std::string prefix = norm + "/";
  auto inside = [&](const std::string& p) { return p.compare(0, prefix.size(), prefix) == 0; };
  if (std::any_of(files_.begin(), files_.end(), [&](const auto& f) { return inside(f.first); }) ||
      std::any_of(dirs_.begin(), dirs_.end(), inside))
    return Status::IOError("rmdir: Directory not empty").WithPath(path);
  dirs_.erase(norm);
  dir_ids_.erase(norm);
  return Status::OK();
}

void MemEnv::SetFreeBytes(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  free_bytes_ = bytes;
}

Result<uint64_t> MemEnv::FreeBytes(const std::string& path) {
  std::string norm = Normalize(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!files_.count(norm) && !DirExistsLocked(norm)) return Status::NotFound("statvfs: No such file or directory").WithPath(path);
  return free_bytes_;
}

}  // namespace zerofold::io
