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

#include <doctest/doctest.h>

#include "io/cursor.h"
#include "io/mem.h"
#include "zerofold/env.h"
#include "zip/archive.h"
#include "zip/format.h"
#include "zip/torch_layout.h"
#include "zip/writer.h"

namespace zerofold::zip::testing {

inline std::string SourceRoot() { return ZF_SOURCE_ROOT; }

// ReadArchive, then every entry located (LocateEntry), as opening each
// does: the first error, in central directory order.
inline Result<Archive> ReadLocatedArchive(const RandomSource& src) {
  ZF_ASSIGN_OR_RETURN(Archive a, ReadArchive(src));
  for (Entry& e : a.entries) {
    ZF_ASSIGN_OR_RETURN(e, LocateEntry(src, e));
  }
  return a;
}
inline Result<Archive> ReadLocatedArchiveBytes(std::span<const std::byte> bytes) {
  return ReadLocatedArchive(io::MemSource("<memory>", bytes));
}

inline std::vector<std::byte> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// Every torch-written zip file under fixtures/deepspeed (legacy-format
// files, which do not start with a local file header, left out), sorted.
inline std::vector<std::string> TorchFixtures() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(SourceRoot() + "/fixtures/deepspeed")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".pt" && ext != ".bin")) continue;
    std::ifstream in(e.path(), std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    if (std::memcmp(magic, "PK\x03\x04", 4) == 0) out.push_back(e.path().string());
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
    // Compared in cache-sized pieces.
    constexpr size_t kPiece = 1 << 20;
    for (size_t at = 0; at < data.size(); at += kPiece) {
      std::span<const std::byte> piece = data.subspan(at, std::min(kPiece, data.size() - at));
      buf_.resize(piece.size());
      Result<size_t> n = expected_->ReadAt(pos_, buf_);
      if (!n.ok()) return n.status();
      const bool same = *n == piece.size() && std::memcmp(buf_.data(), piece.data(), piece.size()) == 0;
      if (!same && mismatch_ == UINT64_MAX) {
        for (size_t i = 0; i < piece.size(); ++i) {
          if (i >= *n || buf_[i] != piece[i]) {
            mismatch_ = pos_ + i;
            break;
          }
        }
      }
      pos_ += piece.size();
    }
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

// A StreamSource reading a RandomSource front to back, in pieces of at most
// max_chunk bytes.
class RandomStream final : public StreamSource {
 public:
  RandomStream(const RandomSource* src, size_t max_chunk) : src_(src), max_chunk_(max_chunk) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    Result<size_t> n = src_->ReadAt(pos_, dst.first(std::min(dst.size(), max_chunk_)));
    if (n.ok()) pos_ += *n;
    return n;
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return src_->name(); }

 private:
  const RandomSource* src_;
  size_t max_chunk_;
  uint64_t pos_ = 0;
};

// A small torch-layout archive written by our Writer, and the offsets of
// its records (from the layout rules, not from reading it).
struct SmallArchive {
  std::vector<std::byte> bytes;
  std::vector<std::string> names;
  std::vector<uint64_t> header;   // local header offsets
  std::vector<uint64_t> data;     // data offsets
  std::vector<uint64_t> central;  // central header offsets
  uint64_t cd_offset = 0;
  uint64_t cd_size = 0;
  uint64_t zip64 = 0;    // zip64 end record
  uint64_t locator = 0;  // zip64 locator
  uint64_t eocd = 0;     // end record
};

inline SmallArchive BuildSmall() {
  SmallArchive s;
  s.names = {"arch/data.pkl", "arch/data/0", "arch/data/1", "arch/version"};
  const size_t sizes[] = {20, 100, 40, 2};
  io::MemSink sink;
  Writer w(&sink);
  for (size_t i = 0; i < s.names.size(); ++i) {
    std::vector<std::byte> data(sizes[i]);
    for (size_t k = 0; k < data.size(); ++k) data[k] = std::byte(static_cast<uint8_t>(i * 31 + k));
    s.header.push_back(w.position());
    s.data.push_back(LayOutEntry(w.position(), s.names[i].size(), data.size()).data_offset());
    REQUIRE(w.AddEntry(s.names[i], data).ok());
  }
  s.cd_offset = w.position();
  uint64_t at = s.cd_offset;
  for (const std::string& n : s.names) {
    s.central.push_back(at);
    at += kCentralFileHeaderSize + n.size();
  }
  s.cd_size = at - s.cd_offset;
  REQUIRE(w.Finish().ok());
  s.bytes = std::move(sink.bytes());
  s.eocd = s.bytes.size() - kEndOfCentralDirSize;
  s.locator = s.eocd - kZip64EndOfCentralDirLocatorSize;
  s.zip64 = s.locator - kZip64EndOfCentralDirSize;
  return s;
}

inline void Put16(std::vector<std::byte>& b, uint64_t at, uint16_t v) { io::EncodeU16le(b.data() + at, v); }
inline void Put32(std::vector<std::byte>& b, uint64_t at, uint32_t v) { io::EncodeU32le(b.data() + at, v); }
inline void Put64(std::vector<std::byte>& b, uint64_t at, uint64_t v) { io::EncodeU64le(b.data() + at, v); }
inline void PutText(std::vector<std::byte>& b, uint64_t at, std::string_view text) {
  std::span<const std::byte> t = io::AsBytes(text);
  std::copy(t.begin(), t.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
}

// A RandomSource that fails its Nth read (0-based) with kIO, as a disk
// error would, and counts reads.
class FailingSource final : public RandomSource {
 public:
  FailingSource(const RandomSource* inner, uint64_t fail_at) : inner_(inner), fail_at_(fail_at) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (reads_++ == fail_at_) return Status::IOError("injected read failure").WithPath(name());
    return inner_->ReadAt(offset, dst);
  }
  uint64_t size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  uint64_t reads() const { return reads_; }

 private:
  const RandomSource* inner_;
  uint64_t fail_at_;
  mutable uint64_t reads_ = 0;
};

// A Sink that accepts `capacity` bytes, then fails with kIO (a full disk).
class FullSink final : public Sink {
 public:
  explicit FullSink(uint64_t capacity) : capacity_(capacity) {}
  Status Append(std::span<const std::byte> data) override {
    if (data.size() > capacity_ - pos_) return Status::IOError("injected ENOSPC");
    pos_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  uint64_t capacity_;
  uint64_t pos_ = 0;
  std::string name_ = "out.pt";
};

}  // namespace zerofold::zip::testing

#endif  // ZEROFOLD_TESTS_ZIP_TEST_UTIL_H_
