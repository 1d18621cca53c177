#include "io/direct_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

namespace zerofold::io {

namespace {

Status WriteError(const std::string& name, int err) {
  return Status::IOError(std::string("write: ") + std::strerror(err)).WithPath(name);
}

}  // namespace

Status WriteAllBuffered(int fd, const std::string& name, std::span<const std::byte> data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, std::min(data.size() - done, kMaxBufferedWriteBytes));
    if (w < 0) {
      if (errno == EINTR) continue;
      return WriteError(name, errno);
    }
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

void DirectWriter::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

DirectWriter::DirectWriter(int fd, std::string name, uint64_t start_offset)
    : fd_(fd), name_(std::move(name)), written_(start_offset) {}

DirectWriter::~DirectWriter() { StopThread(); }

namespace {

// kChunkBytes aligned to kAlignBytes; std::bad_alloc when memory is short,
// as for every other allocation.
std::byte* NewChunk() {
  void* p = nullptr;
  if (::posix_memalign(&p, DirectWriter::kAlignBytes, DirectWriter::kChunkBytes) != 0) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

}  // namespace

void DirectWriter::StopDirect() {
  if (direct_) {
    int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
  }
  direct_ = false;
  may_direct_ = false;
}

Status DirectWriter::WriteBuffered(const std::byte* data, size_t n) {
  StopDirect();  // a buffered write may leave the end unaligned
  ZF_TRY(WriteAllBuffered(fd_, name_, std::span<const std::byte>(data, n)));
  written_ += n;
  return Status::OK();
}

Status DirectWriter::WriteBlock(const std::byte* data, size_t n) {
  if (may_direct_ && !direct_ && written_ % kAlignBytes == 0 && n >= kAlignBytes) {
    int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0) {
      direct_ = true;
    } else {
      may_direct_ = false;  // the filesystem has no direct I/O
    }
  }
  size_t done = 0;
  while (direct_ && n - done >= kAlignBytes) {
    ssize_t w = ::write(fd_, data + done, (n - done) / kAlignBytes * kAlignBytes);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EINVAL) return WriteError(name_, errno);
    // EINVAL: the filesystem wants another alignment; go on buffered.
    if (w < 0) break;
    done += static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
    if (static_cast<size_t>(w) % kAlignBytes != 0) break;  // short: the end is unaligned
  }
  if (done < n) return WriteBuffered(data + done, n - done);
  return Status::OK();
}

void DirectWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return busy_ || stop_; });
    if (!busy_) return;  // stopped with nothing in flight
    lock.unlock();
    Status s = WriteBlock(flight_.get(), kChunkBytes);
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = std::move(s);
    busy_ = false;
    cv_.notify_all();
  }
}

void DirectWriter::StopThread() {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  threaded_ = false;
  stop_ = false;
}

Status DirectWriter::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  return error_;
}

Status DirectWriter::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = std::move(s);
  return error_;
}

Status DirectWriter::Hand() {
  if (!flight_) flight_.reset(NewChunk());
  if (!threaded_ && !no_thread_) {
    try {
      thread_ = std::thread([this] { Run(); });
      threaded_ = true;
    } catch (const std::system_error&) {
      no_thread_ = true;
    }
  }
  if (!threaded_) {
    Status s = WriteBlock(fill_.get(), filled_);
    filled_ = 0;
    return s.ok() ? s : Fail(std::move(s));
  }
  ZF_TRY(WaitIdle());
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(fill_, flight_);
    busy_ = true;
  }
  cv_.notify_all();
  filled_ = 0;
  return Status::OK();
}

Status DirectWriter::Append(std::span<const std::byte> data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
  }
  if (!fill_) fill_.reset(NewChunk());
  accepted_ += data.size();
  while (!data.empty()) {
    size_t n = std::min(data.size(), kChunkBytes - filled_);
    std::memcpy(fill_.get() + filled_, data.data(), n);
    filled_ += n;
    data = data.subspan(n);
    if (filled_ == kChunkBytes) ZF_TRY(Hand());
  }
  return Status::OK();
}

Status DirectWriter::Finish() {
  Status s = WaitIdle();  // no thread: nothing in flight, the error so far
  StopThread();
  if (s.ok() && filled_ > 0) s = WriteBlock(fill_.get(), filled_);
  filled_ = 0;
  StopDirect();
  fill_.reset();
  flight_.reset();
  return s.ok() ? s : Fail(std::move(s));
}

}  // namespace zerofold::io
