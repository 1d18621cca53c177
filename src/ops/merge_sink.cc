#include "ops/merge_sink.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

namespace zerofold::ops {

BackgroundWriteSink::BackgroundWriteSink(Sink* target, size_t buffer_bytes)
    : target_(target), fill_(std::max<size_t>(buffer_bytes, 1)), flight_(fill_.size()) {
  try {
    writer_ = std::thread([this] { Run(); });
    threaded_ = true;
  } catch (const std::system_error&) {
    threaded_ = false;  // no thread: write synchronously
  }
}

BackgroundWriteSink::~BackgroundWriteSink() {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void BackgroundWriteSink::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return busy_ || stop_; });
    if (!busy_) return;  // stopped with nothing in flight
    lock.unlock();
    Status s = target_->Append(std::span<const std::byte>(flight_.data(), flight_size_));
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = std::move(s);
    busy_ = false;
    cv_.notify_all();
  }
}

Status BackgroundWriteSink::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  return error_;
}

Status BackgroundWriteSink::Hand() {
  if (filled_ == 0) return WaitIdle();
  if (!threaded_) {
    Status s = error_.ok() ? target_->Append(std::span<const std::byte>(fill_.data(), filled_)) : error_;
    if (!s.ok() && error_.ok()) error_ = s;
    filled_ = 0;
    return s;
  }
  ZF_TRY(WaitIdle());
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(fill_, flight_);
    flight_size_ = filled_;
    busy_ = true;
  }
  cv_.notify_all();
  filled_ = 0;
  return Status::OK();
}

Status BackgroundWriteSink::Append(std::span<const std::byte> data) {
  while (!data.empty()) {
    size_t n = std::min(data.size(), fill_.size() - filled_);
    std::memcpy(fill_.data() + filled_, data.data(), n);
    filled_ += n;
    position_ += n;
    data = data.subspan(n);
    if (filled_ == fill_.size()) ZF_TRY(Hand());
  }
  if (!threaded_) return error_;
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

Status BackgroundWriteSink::Drain() {
  ZF_TRY(Hand());
  return WaitIdle();
}

}  // namespace zerofold::ops
