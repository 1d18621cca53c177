#include "io/flush_behind_writer.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace zerofold::io {
namespace {

constexpr size_t kChunk = FlushBehindWriter::kChunkBytes;

std::vector<std::byte> Pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<std::byte>(x >> 24);
  }
  return v;
}

std::vector<std::byte> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

// A fresh folder under `parent`, removed with its files at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& parent) {
    std::string pattern = parent + "/zf-flush-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (mkdtemp(name.data()) != nullptr) path_ = name.data();
  }
  ~TempDir() {
    for (const std::string& f : files_) ::unlink(f.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  bool ok() const { return !path_.empty(); }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Writes `data` in appends of the given sizes (cycled), finishes, and
// returns what the file holds.
std::vector<std::byte> WriteInPieces(const std::string& path, const std::vector<std::byte>& data,
                                     const std::vector<size_t>& sizes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  {
    FlushBehindWriter w(fd, path);
    size_t done = 0;
    for (size_t k = 0; done < data.size(); ++k) {
      size_t n = std::min(sizes[k % sizes.size()], data.size() - done);
      REQUIRE(w.Append(std::span<const std::byte>(data.data() + done, n)).ok());
      done += n;
      CHECK_EQ(w.position(), done);
    }
    REQUIRE(w.Finish().ok());
    CHECK_EQ(w.position(), data.size());
  }
  REQUIRE(::fsync(fd) == 0);
  REQUIRE(::close(fd) == 0);
  return ReadFile(path);
}

// The folders tried: the build's working folder (a disk filesystem) and
// /dev/shm (tmpfs).
std::vector<std::string> Parents() {
  std::vector<std::string> out = {"."};
  struct stat st;
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0)
    out.push_back("/dev/shm");
  return out;
}

TEST_CASE("FlushBehindWriter: every byte lands in order, whatever the sizes of the file and of the appends") {
  const std::vector<size_t> file_sizes = {0,          1,          4095,          4096,         4097,
                                          kChunk - 1, kChunk,     kChunk + 1,    2 * kChunk + 4096,
                                          3 * kChunk + 12345};
  const std::vector<std::vector<size_t>> append_sizes = {
      {1 << 20}, {7, 4096, 100000, 3}, {kChunk}, {3 * kChunk}, {kChunk - 1, 2}};
  for (const std::string& parent : Parents()) {
    TempDir dir(parent);
    REQUIRE(dir.ok());
    for (size_t size : file_sizes) {
      for (const std::vector<size_t>& sizes : append_sizes) {
        CAPTURE(parent);
        CAPTURE(size);
        CAPTURE(sizes.front());
        std::vector<std::byte> data = Pattern(size, static_cast<uint32_t>(size + sizes.front()));
        std::string name = std::to_string(size);
        name += '-';
        name += std::to_string(sizes.front());
        CHECK(WriteInPieces(dir.File(name), data, sizes) == data);
      }
    }
  }
}

TEST_CASE("FlushBehindWriter: appends after Finish go on at the end") {
  TempDir dir(".");
  REQUIRE(dir.ok());
  const std::string path = dir.File("twice");
  std::vector<std::byte> a = Pattern(kChunk + 5000, 1), b = Pattern(2 * kChunk + 7, 2);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  {
    FlushBehindWriter w(fd, path);
    REQUIRE(w.Append(a).ok());
    REQUIRE(w.Finish().ok());
    REQUIRE(w.Append(b).ok());
    REQUIRE(w.Finish().ok());
    CHECK_EQ(w.position(), a.size() + b.size());
  }
  REQUIRE(::close(fd) == 0);
  std::vector<std::byte> want = a;
  want.insert(want.end(), b.begin(), b.end());
  CHECK(ReadFile(path) == want);
}

TEST_CASE("FlushBehindWriter drops each step from the cache once the step after next is written") {
  TempDir dir(".");
  REQUIRE(dir.ok());
  constexpr uint64_t kStep = FlushBehindWriter::kFlushBytes;
  // Steps end at 1, 2 and 3 x kStep: the third waits for and drops the first.
  for (uint64_t size : {2 * kStep + 1, 3 * kStep + 5, 4 * kStep}) {
    CAPTURE(size);
    const std::string path = dir.File("flushed" + std::to_string(size));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    std::vector<std::byte> data = Pattern(static_cast<size_t>(size), 5);
    {
      FlushBehindWriter w(fd, path);
      REQUIRE(w.Append(data).ok());
      REQUIRE(w.Finish().ok());
      CHECK_EQ(w.dropped_bytes(), size < 3 * kStep ? 0 : (size / kStep - 2) * kStep);
    }
    REQUIRE(::close(fd) == 0);
    CHECK(ReadFile(path) == data);
  }
}

TEST_CASE("FlushBehindWriter writes through the cache alone where write-back cannot be started") {
  // /dev/null refuses sync_file_range (ESPIPE or EINVAL): every byte must
  // still be written, without an error, and nothing is dropped.
  int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // no /dev/null in this sandbox
  {
    FlushBehindWriter w(fd, "/dev/null");
    std::vector<std::byte> data = Pattern(3 * FlushBehindWriter::kFlushBytes + 777, 6);
    REQUIRE(w.Append(data).ok());
    REQUIRE(w.Append(std::span<const std::byte>(data.data(), 5)).ok());
    REQUIRE(w.Finish().ok());
    CHECK_EQ(w.position(), data.size() + 5);
    CHECK_EQ(w.dropped_bytes(), 0u);
  }
  ::close(fd);
}

TEST_CASE("FlushBehindWriter: a failed write is returned, names the file, and is returned again after") {
  // /dev/full takes no byte: every write fails with ENOSPC.
  int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // no /dev/full in this sandbox
  for (size_t first : {size_t{10}, 2 * kChunk + 1}) {
    CAPTURE(first);
    FlushBehindWriter w(fd, "out.bin");
    std::vector<std::byte> data = Pattern(first, 3);
    Status s = w.Append(data);
    if (s.ok()) s = w.Append(data);
    if (s.ok()) s = w.Finish();
    REQUIRE_FALSE(s.ok());
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_EQ(s.path(), "out.bin");
    CHECK_MESSAGE(s.ToString().find("No space left on device") != std::string::npos, s.ToString());
    Status again = w.Append(data);
    CHECK_FALSE(again.ok());
    CHECK_FALSE(w.Finish().ok());
  }
  ::close(fd);
}

TEST_CASE("FlushBehindWriter destroyed without Finish waits for its thread and leaves the descriptor open") {
  TempDir dir(".");
  REQUIRE(dir.ok());
  const std::string path = dir.File("dropped");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  {
    FlushBehindWriter w(fd, path);
    REQUIRE(w.Append(Pattern(3 * kChunk + 1, 4)).ok());
  }
  CHECK_EQ(::fcntl(fd, F_GETFD) >= 0, true);
  // At most the handed chunks reached the file; the staged tail did not.
  struct stat st;
  REQUIRE(::fstat(fd, &st) == 0);
  CHECK_LE(static_cast<uint64_t>(st.st_size), 3 * kChunk);
  CHECK_EQ(static_cast<uint64_t>(st.st_size) % kChunk, 0u);
  ::close(fd);
}

}  // namespace
}  // namespace zerofold::io
