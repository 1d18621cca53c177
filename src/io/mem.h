// In-memory sources and sinks for tests, fuzzers and small records.
#ifndef ZEROFOLD_IO_MEM_H_
#define ZEROFOLD_IO_MEM_H_

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::io {

// A RandomSource over bytes it owns.
class MemSource final : public RandomSource {
 public:
  MemSource(std::string name, std::vector<std::byte> bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
  MemSource(std::string name, std::span<const std::byte> bytes)
      : name_(std::move(name)), bytes_(bytes.begin(), bytes.end()) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= bytes_.size()) return size_t{0};
    size_t n = std::min<uint64_t>(dst.size(), bytes_.size() - offset);
    if (n) std::memcpy(dst.data(), bytes_.data() + offset, n);
    return n;
  }
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::string name_;
  std::vector<std::byte> bytes_;
};

// A StreamSource over bytes it owns; refuses nothing, reads forward only.
class MemStreamSource final : public StreamSource {
 public:
  MemStreamSource(std::string name, std::vector<std::byte> bytes, size_t max_chunk = SIZE_MAX)
      : name_(std::move(name)), bytes_(std::move(bytes)), max_chunk_(max_chunk) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    size_t n = std::min({dst.size(), bytes_.size() - pos_, max_chunk_});
    if (n) std::memcpy(dst.data(), bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::vector<std::byte> bytes_;
  size_t max_chunk_;
  size_t pos_ = 0;
};

// A Sink that appends to a byte vector.
class MemSink final : public Sink {
 public:
  explicit MemSink(std::string name = "<memory>") : name_(std::move(name)) {}
  Status Append(std::span<const std::byte> data) override {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return Status::OK();
  }
  uint64_t position() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  std::string name_;
  std::vector<std::byte> bytes_;
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_MEM_H_
