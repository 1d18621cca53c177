// With io/flush_behind_writer.cc, the only files that call the operating system's
// file API.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>
#include <cstring>
#include <random>
#include <string>

#include "io/exit_cleanup.h"
#include "io/flush_behind_writer.h"
#include "io/temp_name.h"
#include "zerofold/env.h"

namespace zerofold {

namespace {

Status PosixError(const std::string& path, const char* what, int err) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  Status s = err == ENOENT ? Status::NotFound(msg) : Status::IOError(msg);
  s.WithPath(path);
  return s;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Open descriptors of the files read at random are capped, so that a merge
// of thousands of rank files (a Distributed Checkpoint of 2048 ranks holds
// 2048 .distcp files) runs under any limit on open files: at most half the
// soft RLIMIT_NOFILE (at least 4) stay open; the least recently read is
// closed to make room, and reopened when read again. A reopened file must
// be the one first opened (same device, inode and size), or the read fails
// with kIO: a file replaced while being read is never read in its new form.
class PosixRandomSource;

// The files held open, least recently read first. Process-wide.
struct OpenFiles {
  std::mutex mu;
  std::list<const PosixRandomSource*> lru;

  static OpenFiles& Get() {
    static OpenFiles* files = new OpenFiles;  // never destroyed: sources may outlive main's statics
    return *files;
  }
  static size_t Budget() {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    return std::max<size_t>(4, static_cast<size_t>(limit.rlim_cur / 2));
  }
};

// A descriptor, closed when its last reader lets go of it (a reader keeps
// it across its pread though the pool closed the source meanwhile).
struct Descriptor {
  explicit Descriptor(int f) : fd(f) {}
  ~Descriptor() { ::close(fd); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  const int fd;
};

class PosixRandomSource final : public RandomSource {
 public:
  // `pooled`: the descriptor may be closed and the file reopened by `path`
  // (files that keep their path; not a temp file about to be renamed).
  PosixRandomSource(std::string name, std::string path, int fd, const struct stat& st, bool pooled)
      : name_(std::move(name)), path_(std::move(path)), device_(st.st_dev), inode_(st.st_ino),
        size_(static_cast<uint64_t>(st.st_size)), pooled_(pooled), fd_(std::make_shared<Descriptor>(fd)) {
    if (pooled_) {
      OpenFiles& files = OpenFiles::Get();
      std::lock_guard<std::mutex> lock(files.mu);
      Track(files);
    }
  }
  ~PosixRandomSource() override {
    if (!pooled_) return;
    OpenFiles& files = OpenFiles::Get();
    std::lock_guard<std::mutex> lock(files.mu);
    if (fd_ != nullptr) files.lru.erase(lru_pos_);
  }

  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    ZF_ASSIGN_OR_RETURN(std::shared_ptr<const Descriptor> d, Acquire());
    size_t done = 0;
    while (done < dst.size()) {
      if (offset + done >= size_) break;
      ssize_t r = ::pread(d->fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError(name_, "read", errno).WithOffset(offset + done);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }
  void WillNeed(uint64_t offset, uint64_t length) const override {
    Result<std::shared_ptr<const Descriptor>> d = Acquire();
    if (d.ok()) ::posix_fadvise((*d)->fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_WILLNEED);
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  // The open descriptor, reopening the file if the pool closed it.
  Result<std::shared_ptr<const Descriptor>> Acquire() const {
    if (!pooled_) return std::shared_ptr<const Descriptor>(fd_);
    OpenFiles& files = OpenFiles::Get();
    std::lock_guard<std::mutex> lock(files.mu);
    if (fd_ != nullptr) {
      files.lru.splice(files.lru.end(), files.lru, lru_pos_);
      return std::shared_ptr<const Descriptor>(fd_);
    }
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(name_, "reopen (closed to stay under the limit on open files)", errno);
    auto d = std::make_shared<Descriptor>(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return PosixError(name_, "stat", errno);
    if (st.st_dev != device_ || st.st_ino != inode_ || static_cast<uint64_t>(st.st_size) != size_) {
      return Status::IOError("was replaced or changed size while being read (" + std::to_string(size_) + " bytes, now " +
                             std::to_string(st.st_size) + ")")
          .WithPath(name_);
    }
    fd_ = std::move(d);
    Track(files);
    return std::shared_ptr<const Descriptor>(fd_);
  }

  // Puts this source (just opened) last in the pool, closing the least
  // recently read ones over the budget. REQUIRES: files.mu held.
  void Track(OpenFiles& files) const {
    files.lru.push_back(this);
    lru_pos_ = std::prev(files.lru.end());
    const size_t budget = OpenFiles::Budget();
    while (files.lru.size() > budget) {
      const PosixRandomSource* oldest = files.lru.front();
      files.lru.pop_front();
      oldest->fd_.reset();
    }
  }

  const std::string name_;
  const std::string path_;
  const dev_t device_;
  const ino_t inode_;
  const uint64_t size_;
  const bool pooled_;
  // Guarded by OpenFiles::mu when pooled_; null while the pool has it closed.
  mutable std::shared_ptr<Descriptor> fd_;
  mutable std::list<const PosixRandomSource*>::iterator lru_pos_;
};

// Opens the regular file at `path` for positional reads; the source and its
// errors carry `name`. `pooled` as PosixRandomSource's.
Result<std::unique_ptr<RandomSource>> OpenRegularFile(const std::string& path, const std::string& name, bool pooled) {
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer (then
  // refused below as no regular file); regular files ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENXIO)  // a socket
    return Status::InvalidArgument("not a regular file (use - for a pipe)").WithPath(name);
  if (fd < 0) return PosixError(name, "open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return PosixError(name, "stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(S_ISDIR(st.st_mode) ? "is a folder, not a file"
                                                         : "not a regular file (use - for a pipe)")
        .WithPath(name);
  }
  return std::unique_ptr<RandomSource>(new PosixRandomSource(name, path, fd, st, pooled));
}

class PosixStreamSource final : public StreamSource {
 public:
  PosixStreamSource(std::string name, int fd, bool owned) : name_(std::move(name)), fd_(fd), owned_(owned) {}
  ~PosixStreamSource() override {
    if (owned_) ::close(fd_);
  }
  Result<size_t> Read(std::span<std::byte> dst) override {
    while (true) {
      ssize_t r = ::read(fd_, dst.data(), dst.size());
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError(name_, "read", errno).WithOffset(pos_);
      }
      pos_ += static_cast<uint64_t>(r);
      return static_cast<size_t>(r);
    }
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
  bool owned_;
  uint64_t pos_ = 0;
};

// The pipe buffer asked for on standard input.
constexpr int kStdinPipeBytes = 1 << 20;

// Links followed before giving up, as the kernel's limit (ELOOP).
constexpr int kMaxLinkHops = 40;

// Where a write to `path` lands: `path`, or when it is a symlink, the final
// target of its chain of links (a relative link read from its own folder).
// That target need not exist: a dangling link is written through, creating
// it, as a shell redirection does. A loop, or a chain longer than the
// kernel follows, is kIO (ELOOP); anything else that cannot be read as a
// link (a missing folder) is returned as it stands, for the create to
// report.
Result<std::string> FinalTarget(const std::string& path) {
  std::string at = path;
  for (int hops = 0; hops <= kMaxLinkHops; ++hops) {
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    std::string link(PATH_MAX, '\0');
    ssize_t n = ::readlink(at.c_str(), link.data(), link.size());
    if (n <= 0 || static_cast<size_t>(n) >= link.size()) return at;
    link.resize(static_cast<size_t>(n));
    if (link[0] != '/' && at.find('/') != std::string::npos) link = DirName(at) + "/" + link;
    at = std::move(link);
  }
  return PosixError(path, "follow symlinks", ELOOP);
}

// What a replacement keeps of the regular file it replaces.
struct Replaced {
  mode_t mode;  // permission bits, with set-user-ID, set-group-ID and sticky
  uid_t owner;
  gid_t group;
};

// Gives the new file at `fd` the replaced file's owner and group where this
// process may (the owner needs privilege, the group membership: EPERM for
// the owner leaves it ours and tries the group alone). Best effort, as
// cp -p: a file system that keeps no owners fails no write.
void TakeOwnerAndGroup(int fd, const Replaced& r) {
  if (::fchown(fd, r.owner, r.group) != 0) ::fchown(fd, static_cast<uid_t>(-1), r.group);
}

class PosixAtomicFileSink final : public AtomicFileSink {
 public:
  // `target` the path the user gave, `real` the file it names (FinalTarget),
  // `temp` beside `real`.
  PosixAtomicFileSink(std::string target, std::string real, std::string temp, int fd,
                      std::optional<Replaced> replaced, io::ExitCleanup::Entry temp_entry)
      : target_(std::move(target)), real_(std::move(real)), temp_(std::move(temp)), fd_(fd),
        replaced_(replaced), writer_(fd, target_), temp_entry_(std::move(temp_entry)) {}
  ~PosixAtomicFileSink() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }
  Status Append(std::span<const std::byte> data) override {
    if (fd_ < 0) return Status::Internal("append after close").WithPath(target_);
    return writer_.Append(data);
  }
  Status Flush() override { return fd_ < 0 ? Status::OK() : writer_.Finish(); }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    ZF_TRY(writer_.Finish());
    if (replaced_) ::fchmod(fd_, replaced_->mode);  // exactly the replaced file's, now that it is written
    if (::fsync(fd_) != 0) return PosixError(target_, "fsync", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) return PosixError(target_, "close", errno);
    return Status::OK();
  }
  uint64_t position() const override { return writer_.position(); }
  const std::string& name() const override { return target_; }
  Status Commit() override {
    if (committed_) return Status::Internal("commit twice").WithPath(target_);
    ZF_TRY(Close());
    // A stop at once (io/exit_cleanup.h) removes the file from its rename on
    // when the rename created it; a file it replaced stays, made by no run.
    io::ExitCleanup::Entry made(io::ExitCleanup::Process(), real_, io::ExitCleanup::Kind::kOutput);
    int rename_error = 0;
    {
      io::ExitCleanup::Section section(io::ExitCleanup::Process());
      struct stat st;
      const bool existed = ::lstat(real_.c_str(), &st) == 0;
      if (::rename(temp_.c_str(), real_.c_str()) != 0) {
        rename_error = errno;
      } else {
        if (!existed) made.Arm();
        temp_entry_.Drop();
      }
    }
    if (rename_error != 0) return PosixError(target_, "rename", rename_error);
    made.Keep();
    committed_ = true;
    int dfd = ::open(DirName(real_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return Status::OK();
  }
  Result<std::unique_ptr<RandomSource>> OpenWritten() override {
    if (committed_) return Status::Internal("read back after commit").WithPath(target_);
    if (fd_ >= 0) ZF_TRY(writer_.Finish());
    return OpenRegularFile(temp_, target_, /*pooled=*/false);  // the temp path goes at Commit
  }

 private:
  std::string target_;
  std::string real_;
  std::string temp_;
  int fd_;
  std::optional<Replaced> replaced_;
  io::FlushBehindWriter writer_;  // large files leave the page cache as they reach the disk
  io::ExitCleanup::Entry temp_entry_;  // the temp file, for a stop at once
  bool committed_ = false;
};

class FdSink final : public Sink {
 public:
  FdSink(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  Status Append(std::span<const std::byte> data) override {
    ZF_TRY(io::WriteAllBuffered(fd_, name_, data));
    pos_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
  uint64_t pos_ = 0;
};

// Standard output when it is a regular file: written through a descriptor of
// its own, opened again from /proc/self/fd/1, so that the writer thread
// never moves the offset of the descriptor the shell shares with other
// programs. Flush() moves standard output's offset past the bytes written,
// as if they had gone through it.
class StdoutFileSink final : public Sink {
 public:
  StdoutFileSink(int fd, uint64_t start) : fd_(fd), start_(start), writer_(fd, name_, start) {}
  ~StdoutFileSink() override { ::close(fd_); }
  Status Append(std::span<const std::byte> data) override { return writer_.Append(data); }
  Status Flush() override {
    ZF_TRY(writer_.Finish());
    if (::lseek(1, static_cast<off_t>(start_ + writer_.position()), SEEK_SET) < 0)
      return PosixError(name_, "seek", errno);
    return Status::OK();
  }
  uint64_t position() const override { return writer_.position(); }
  const std::string& name() const override { return name_; }

  // The sink, or null when standard output is not a regular file at an
  // offset of its own (a pipe, a terminal, O_APPEND) or cannot be reopened.
  static std::unique_ptr<Sink> Open() {
    struct stat st;
    if (::fstat(1, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    int flags = ::fcntl(1, F_GETFL);
    off_t at = ::lseek(1, 0, SEEK_CUR);
    if (flags < 0 || (flags & O_APPEND) != 0 || at < 0) return nullptr;
    int fd = ::open("/proc/self/fd/1", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat again;
    if (::fstat(fd, &again) != 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino ||
        ::lseek(fd, at, SEEK_SET) != at) {
      ::close(fd);
      return nullptr;
    }
    return std::unique_ptr<Sink>(new StdoutFileSink(fd, static_cast<uint64_t>(at)));
  }

 private:
  const std::string name_ = "<stdout>";
  int fd_;
  uint64_t start_;
  io::FlushBehindWriter writer_;
};

// The first 8 hex digits of a file holding a 128-bit id (machine-id,
// boot_id); 0 when it cannot be read.
uint32_t IdPrefix(const char* path) {
  char buf[16] = {};
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = ::read(fd, buf, 8);
  ::close(fd);
  if (n != 8) return 0;
  return static_cast<uint32_t>(std::strtoul(buf, nullptr, 16));
}

// Field 22 of /proc/<pid>/stat (starttime), counted after the ')' that
// ends the command name, which may hold spaces and parentheses.
io::ProcessState ProbeProcess(uint64_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {errno == ENOENT ? io::ProcessState::kAbsent : io::ProcessState::kUnknown, 0};
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {io::ProcessState::kUnknown, 0};
  std::string_view text(buf, static_cast<size_t>(n));
  size_t at = text.rfind(')');
  if (at == std::string_view::npos) return {io::ProcessState::kUnknown, 0};
  // Fields 3.. follow ") "; starttime is the 20th of them.
  int field = 2;
  size_t i = at + 1;
  while (i < text.size() && field < 22) {
    while (i < text.size() && text[i] == ' ') ++i;
    ++field;
    if (field == 22) break;
    while (i < text.size() && text[i] != ' ') ++i;
  }
  if (field != 22 || i >= text.size()) return {io::ProcessState::kUnknown, 0};
  return {io::ProcessState::kRunning, std::strtoull(text.data() + i, nullptr, 10)};
}

// This process, as its temp file names carry it.
const io::WriterId& Self() {
  static const io::WriterId self = [] {
    io::WriterId w;
    w.machine = IdPrefix("/etc/machine-id");
    w.boot = IdPrefix("/proc/sys/kernel/random/boot_id");
    w.pid = static_cast<uint64_t>(::getpid());
    io::ProcessState p = ProbeProcess(w.pid);
    w.start = p.start;
    return w;
  }();
  return self;
}

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) override {
    return OpenRegularFile(path, path, /*pooled=*/true);
  }

  Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) override {
    if (path == "-") {
      // A pipe's default 64 KiB makes reader and writer switch every 64 KiB;
      // ask for 1 MiB (best effort: not a pipe, or above
      // /proc/sys/fs/pipe-max-size for an unprivileged user, stays as is).
      ::fcntl(0, F_SETPIPE_SZ, kStdinPipeBytes);
      return std::unique_ptr<StreamSource>(new PosixStreamSource("<stdin>", 0, false));
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, "open", errno);
    return std::unique_ptr<StreamSource>(new PosixStreamSource(path, fd, true));
  }

  Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) override {
    static thread_local std::mt19937_64 rng(std::random_device{}());
    ZF_ASSIGN_OR_RETURN(const std::string real, FinalTarget(path));
    std::string dir = DirName(real);
    const bool bare = real.find('/') == std::string::npos;
    SweepOnce(dir);
    std::optional<Replaced> replaced;
    struct stat st;
    if (::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      replaced = Replaced{static_cast<mode_t>(st.st_mode & 07777), st.st_uid, st.st_gid};
    std::string base = real.substr(bare ? 0 : real.rfind('/') + 1);
    for (int attempt = 0; attempt < 16; ++attempt) {
      std::string temp = (bare ? "" : dir + "/") + io::TempFileName(base, Self(), rng());
      // The kernel takes the umask off: a new file gets 0666 & ~umask, as
      // any new file; a replacement is never more open than the file it
      // replaces while written (its mode, and the owner's read and write),
      // and gets that mode exactly at Commit().
      const mode_t create = replaced ? (replaced->mode & 0777) | S_IRUSR | S_IWUSR : 0666;
      io::ExitCleanup::Entry entry(io::ExitCleanup::Process(), temp, io::ExitCleanup::Kind::kTemp);
      int fd, open_error;
      {
        io::ExitCleanup::Section section(io::ExitCleanup::Process());  // made and registered as one step
        fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, create);
        open_error = errno;
        if (fd >= 0) entry.Arm();
      }
      if (fd >= 0) {
        if (replaced) TakeOwnerAndGroup(fd, *replaced);
        return std::unique_ptr<AtomicFileSink>(
            new PosixAtomicFileSink(path, real, temp, fd, replaced, std::move(entry)));
      }
      if (open_error != EEXIST) return PosixError(path, "create temp file", open_error);
    }
    return Status::IOError("could not create a unique temp file").WithPath(path);
  }

  std::vector<std::string> TakeRemovedTempFiles() override {
    std::lock_guard<std::mutex> lock(sweep_mu_);
    return std::exchange(removed_, {});
  }

  Result<std::unique_ptr<Sink>> StdoutSink() override {
    if (std::unique_ptr<Sink> file = StdoutFileSink::Open()) return file;
    return std::unique_ptr<Sink>(new FdSink("<stdout>", 1));
  }

  bool FileExists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return PosixError(path, "open folder", errno);
    std::vector<DirEntry> out;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      out.push_back({name, IsDirectory(path + "/" + name)});
    }
    ::closedir(d);
    return out;
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty() || IsDirectory(path)) return Status::OK();
    std::string parent = DirName(path);
    if (parent != path && parent != "." && parent != "/") ZF_TRY(CreateDirs(parent));
    if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) return PosixError(path, "mkdir", errno);
    return Status::OK();
  }

  Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) override {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, OpenRandom(path));
    if (src->size() > max_bytes)
      return Status::Limit("file is " + std::to_string(src->size()) + " bytes, limit " +
                           std::to_string(max_bytes))
          .WithPath(path);
    std::string out(static_cast<size_t>(src->size()), '\0');
    ZF_TRY(ReadExactAt(*src, 0, std::as_writable_bytes(std::span<char>(out.data(), out.size()))));
    return out;
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError(path, "remove", errno);
    return Status::OK();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return PosixError(path, "rmdir", errno);
    return Status::OK();
  }

  Result<uint64_t> FreeBytes(const std::string& path) override {
    struct statvfs fs;
    if (::statvfs(path.c_str(), &fs) != 0) return PosixError(path, "statvfs", errno);
    return static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
  }

  Result<FileId> GetFileId(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, "stat", errno);
    return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }

 private:
  // Removes the temp files in `dir` whose writers are gone, once per folder.
  void SweepOnce(const std::string& dir) {
    {
      std::lock_guard<std::mutex> lock(sweep_mu_);
      if (!swept_.insert(dir).second) return;
    }
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return;
    std::vector<std::string> gone;
    while (const dirent* e = ::readdir(d)) {
      std::optional<io::WriterId> writer = io::ParseTempFileName(e->d_name);
      if (!writer || !io::WriterGone(*writer, Self(), ProbeProcess)) continue;
      std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (::unlink(path.c_str()) == 0) gone.push_back(path);
    }
    ::closedir(d);
    std::lock_guard<std::mutex> lock(sweep_mu_);
    removed_.insert(removed_.end(), gone.begin(), gone.end());
  }

  std::mutex sweep_mu_;
  std::set<std::string> swept_;        // folders swept
  std::vector<std::string> removed_;   // paths removed, not yet taken
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace zerofold
