// Helpers shared by the zip tests: fixture files, and sources that stand in
// for archives too large to hold in memory.
#ifndef ZEROFOLD_TESTS_ZIP_TEST_UTIL_H_
#define ZEROFOLD_TESTS_ZIP_TEST_UTIL_H_

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "zerofold/env.h"

namespace zerofold::zip::testing {

inline std::string SourceRoot() { return ZF_SOURCE_ROOT; }

inline std::vector<std::byte> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// Every torch-written zip file under fixtures/deepspeed, sorted.
inline std::vector<std::string> TorchFixtures() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(SourceRoot() + "/fixtures/deepspeed")) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".pt" || ext == ".bin")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// fixtures/zip/torch_zip64.*: a 4.25 GiB torch archive kept as its head and
// tail; the bytes between are zeros (the big storage's data).
class TorchZip64Source final : public RandomSource {
 public:
  // From fixtures/zip/torch_zip64.json.
  static constexpr uint64_t kFileSize = 4563404151;
  static constexpr uint64_t kZeroStart = 512;
  static constexpr uint64_t kZeroEnd = 4563403264;

  TorchZip64Source()
      : head_(ReadFileBytes(SourceRoot() + "/fixtures/zip/torch_zip64.head")),
        tail_(ReadFileBytes(SourceRoot() + "/fixtures/zip/torch_zip64.tail")) {}
  bool loaded() const { return head_.size() == kZeroStart && tail_.size() == kFileSize - kZeroEnd; }

  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    size_t done = 0;
    while (done < dst.size() && offset < kFileSize) {
      const size_t want = dst.size() - done;
      size_t n;
      if (offset < kZeroStart) {
        n = static_cast<size_t>(std::min<uint64_t>(want, kZeroStart - offset));
        std::memcpy(dst.data() + done, head_.data() + offset, n);
      } else if (offset < kZeroEnd) {
        n = static_cast<size_t>(std::min<uint64_t>(want, kZeroEnd - offset));
        std::memset(dst.data() + done, 0, n);
      } else {
        n = static_cast<size_t>(std::min<uint64_t>(want, kFileSize - offset));
        std::memcpy(dst.data() + done, tail_.data() + (offset - kZeroEnd), n);
      }
      done += n;
      offset += n;
    }
    return done;
  }
  uint64_t size() const override { return kFileSize; }
  const std::string& name() const override { return name_; }

 private:
  std::vector<std::byte> head_;
  std::vector<std::byte> tail_;
  std::string name_ = "torch_zip64.pt";
};

// A Sink that compares every appended byte with a reference source and
// keeps no data; mismatch() is the first differing offset, or UINT64_MAX.
class ComparingSink final : public Sink {
 public:
  explicit ComparingSink(const RandomSource* expected) : expected_(expected) {}
  Status Append(std::span<const std::byte> data) override {
    buf_.resize(data.size());
    Result<size_t> n = expected_->ReadAt(pos_, buf_);
    if (!n.ok()) return n.status();
    const bool same = *n == data.size() && std::memcmp(buf_.data(), data.data(), data.size()) == 0;
    if (!same && mismatch_ == UINT64_MAX) {
      for (size_t i = 0; i < data.size(); ++i) {
        if (i >= *n || buf_[i] != data[i]) {
          mismatch_ = pos_ + i;
          break;
        }
      }
    }
    pos_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }
  uint64_t mismatch() const { return mismatch_; }

 private:
  const RandomSource* expected_;
  std::vector<std::byte> buf_;
  uint64_t pos_ = 0;
  uint64_t mismatch_ = UINT64_MAX;
  std::string name_ = "<comparing>";
};

}  // namespace zerofold::zip::testing

#endif  // ZEROFOLD_TESTS_ZIP_TEST_UTIL_H_
