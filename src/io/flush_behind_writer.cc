#include "io/flush_behind_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <tuple>
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

FlushBehindWriter::FlushBehindWriter(int fd, std::string name, uint64_t start_offset)
    : fd_(fd), name_(std::move(name)), start_(start_offset), written_(start_offset), started_(start_offset),
      previous_(start_offset), dropped_(start_offset) {}

FlushBehindWriter::~FlushBehindWriter() { StopThread(); }

Status FlushBehindWriter::FlushBehind() {
#if defined(__linux__)
  if (!may_flush_ || written_ - started_ < kFlushBytes) return Status::OK();
  auto range = [](uint64_t from, uint64_t to) {
    return std::pair<off_t, off_t>(static_cast<off_t>(from), static_cast<off_t>(to - from));
  };
  auto [at, n] = range(started_, written_);
  if (::sync_file_range(fd_, at, n, SYNC_FILE_RANGE_WRITE) != 0) {
    // A descriptor that cannot be flushed this way (EINVAL, ESPIPE) is
    // written through the cache alone.
    if (errno != EIO && errno != ENOSPC) {
      may_flush_ = false;
      return Status::OK();
    }
    return WriteError(name_, errno);
  }
  if (previous_ > dropped_) {
    std::tie(at, n) = range(dropped_, previous_);
    const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    if (::sync_file_range(fd_, at, n, wait) != 0) return WriteError(name_, errno);
    ::posix_fadvise(fd_, at, n, POSIX_FADV_DONTNEED);  // a hint: the bytes are on disk either way
    dropped_ = previous_;
  }
  previous_ = started_;
  started_ = written_;
#endif
  return Status::OK();
}

Status FlushBehindWriter::WriteBlock(const std::byte* data, size_t n) {
  ZF_TRY(WriteAllBuffered(fd_, name_, std::span<const std::byte>(data, n)));
  written_ += n;
  return FlushBehind();
}

void FlushBehindWriter::Run() {
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

void FlushBehindWriter::StopThread() {
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

Status FlushBehindWriter::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  return error_;
}

Status FlushBehindWriter::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = std::move(s);
  return error_;
}

Status FlushBehindWriter::Hand() {
  if (!flight_) flight_.reset(new std::byte[kChunkBytes]);  // no zero-fill: written before it is read
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

Status FlushBehindWriter::Append(std::span<const std::byte> data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
  }
  if (!fill_) fill_.reset(new std::byte[kChunkBytes]);
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

Status FlushBehindWriter::Finish() {
  Status s = WaitIdle();  // no thread: nothing in flight, the error so far
  StopThread();
  if (s.ok() && filled_ > 0) s = WriteBlock(fill_.get(), filled_);
  filled_ = 0;
  fill_.reset();
  flight_.reset();
  return s.ok() ? s : Fail(std::move(s));
}

}  // namespace zerofold::io
