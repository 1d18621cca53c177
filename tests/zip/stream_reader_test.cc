#include "zip/stream_reader.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "io/mem.h"
#include "test_util.h"
#include "zip/archive.h"
#include "zip/entry_source.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

using testing::BuildSmall;
using testing::Put16;
using testing::Put32;
using testing::PutText;
using testing::ReadFileBytes;
using testing::SourceRoot;

// How a test consumes each entry.
enum class Way { kReadAll, kDeclareAndRead, kSkip };

// Reads every entry of `bytes` through a StreamReader fed `chunk` bytes at a
// time, consuming entry i the way ways[i % size] says, and checks it
// against ReadArchive/ReadEntry. Returns the first error.
Status StreamAndCompare(const std::vector<std::byte>& bytes, size_t chunk, std::vector<Way> ways) {
  io::MemSource random("archive", bytes);
  Result<Archive> archive = testing::ReadLocatedArchive(random);
  REQUIRE_MESSAGE(archive.ok(), archive.status().ToString());
  io::MemStreamSource src("archive", bytes, chunk);
  StreamReader r(&src);
  for (size_t i = 0;; ++i) {
    CAPTURE(i);
    ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
    if (e == nullptr) {
      CHECK_EQ(i, archive->entries.size());
      break;
    }
    REQUIRE_LT(i, archive->entries.size());
    const Entry& want = archive->entries[i];
    CHECK_EQ(e->name, want.name);
    CHECK_EQ(e->header_offset, want.header_offset);
    CHECK_EQ(e->data_offset, want.data_offset);
    if (e->size_known) CHECK_EQ(e->size, want.size);
    const std::vector<std::byte> data = ReadEntry(random, want, 1 << 30).value();
    switch (ways[i % ways.size()]) {
      case Way::kReadAll: {
        ZF_ASSIGN_OR_RETURN(std::vector<std::byte> got, r.ReadAll(1 << 30));
        CHECK(got == data);
        CHECK(e->size_known);
        CHECK_EQ(e->size, want.size);
        break;
      }
      case Way::kDeclareAndRead: {
        ZF_TRY(r.DeclareSize(want.size));
        std::vector<std::byte> got;
        std::byte piece[13];
        while (true) {
          ZF_ASSIGN_OR_RETURN(size_t n, r.Read(piece));
          if (n == 0) break;
          got.insert(got.end(), piece, piece + n);
        }
        ZF_TRY(r.FinishEntry());
        CHECK(got == data);
        break;
      }
      case Way::kSkip:
        break;
    }
  }
  ZF_TRY(r.Finish());
  ZF_ASSIGN_OR_RETURN(const StreamEntry* after, r.Next());
  CHECK_EQ(after, nullptr);
  CHECK_EQ(r.position(), bytes.size());
  return Status::OK();
}

TEST_CASE("every torch-written fixture streams entry by entry, each way, in small pieces") {
  const std::vector<std::string> files = testing::TorchFixtures();
  REQUIRE_GE(files.size(), 30u);
  const size_t kChunks[] = {1, 7, 64, 4096, 1 << 20};
  const std::vector<Way> kOrders[] = {
      {Way::kReadAll, Way::kDeclareAndRead, Way::kSkip},
      {Way::kSkip, Way::kReadAll, Way::kDeclareAndRead},
      {Way::kDeclareAndRead, Way::kSkip, Way::kReadAll},
  };
  for (size_t f = 0; f < files.size(); ++f) {
    CAPTURE(files[f]);
    const std::vector<std::byte> bytes = ReadFileBytes(files[f]);
    for (size_t k = 0; k < 3; ++k) {
      const size_t chunk = kChunks[(f + k) % std::size(kChunks)];
      CAPTURE(chunk);
      Status s = StreamAndCompare(bytes, chunk, kOrders[k]);
      CHECK_MESSAGE(s.ok(), s.ToString());
    }
  }
}

TEST_CASE("torch's local headers state no size; empty entries state theirs") {
  const std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/zip/torch_small.pt");
  io::MemStreamSource src("torch_small.pt", bytes, 5);
  StreamReader r(&src);
  size_t entries = 0;
  bool saw_empty = false;
  while (true) {
    const StreamEntry* e = r.Next().value();
    if (e == nullptr) break;
    ++entries;
    if (e->has_descriptor) {
      CHECK_FALSE(e->size_known);
      CHECK_EQ(e->flags, kFlagUtf8 | kFlagDataDescriptor);
      Result<size_t> no_size = r.Read(std::span<std::byte>());
      CHECK_EQ(no_size.status().code(), Code::kInvalidArgument);
    } else {
      saw_empty = true;
      CHECK(e->size_known);
      CHECK_EQ(e->size, 0u);
      CHECK_EQ(e->flags, kFlagUtf8);
    }
  }
  CHECK_EQ(entries, 4u);
  CHECK(saw_empty);
  CHECK(r.Finish().ok());
}

TEST_CASE("a Python zipfile rewrite streams with the sizes in its local headers") {
  const std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/zip/python_rewrite.pt");
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{1000}}) {
    CAPTURE(chunk);
    Status s = StreamAndCompare(bytes, chunk, {Way::kReadAll, Way::kSkip, Way::kDeclareAndRead});
    CHECK_MESSAGE(s.ok(), s.ToString());
  }
  io::MemStreamSource src("python_rewrite.pt", bytes);
  StreamReader r(&src);
  const StreamEntry* e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_FALSE(e->has_descriptor);
  CHECK(e->size_known);
  CHECK_NE(e->crc32, 0u);
}

TEST_CASE("the 4.25 GiB torch archive streams, zip64 descriptors included") {
  testing::TorchZip64Source archive;
  REQUIRE(archive.loaded());
  testing::RandomStream src(&archive, 1 << 20);
  StreamReader r(&src);
  const StreamEntry* e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_EQ(e->name, "torch_zip64/data.pkl");
  REQUIRE(r.ReadAll(1 << 20).ok());
  e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_EQ(e->name, "torch_zip64/data/0");
  CHECK_FALSE(e->size_known);
  CHECK_EQ(e->data_offset, testing::TorchZip64Source::kZeroStart);
  // Skipped by scanning 4.25 GiB for the descriptor.
  e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_EQ(e->name, "torch_zip64/data/1");
  CHECK_GT(e->header_offset, 0xFFFFFFFFull);
  std::vector<std::byte> small = r.ReadAll(100).value();
  CHECK_EQ(small.size(), 10u);  // five int16
  CHECK_EQ(small[2], std::byte{1});
  e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_EQ(e->name, "torch_zip64/data/2");
  CHECK(e->size_known);
  CHECK_EQ(e->size, 0u);
  e = r.Next().value();
  REQUIRE(e != nullptr);
  CHECK_EQ(e->name, "torch_zip64/version");
  CHECK_EQ(io::AsChars(r.ReadAll(16).value()), "3\n");
  CHECK_EQ(r.Next().value(), nullptr);
  Status fin = r.Finish();
  CHECK_MESSAGE(fin.ok(), fin.ToString());
  CHECK_EQ(r.position(), archive.size());
}

struct StreamBadCase {
  const char* name;
  std::function<void(const testing::SmallArchive&, std::vector<std::byte>&)> mutate;
  Way way;  // how every entry is consumed
  Code code;
  std::function<uint64_t(const testing::SmallArchive&)> offset;
  const char* record;
};

const StreamBadCase kStreamBadCases[] = {
    {"data byte flipped, size declared", [](const auto& s, auto& b) { b[s.data[1] + 5] ^= std::byte{1}; },
     Way::kDeclareAndRead, Code::kCorrupt, [](const auto& s) { return s.data[1]; }, "arch/data/0"},
    {"data byte flipped, found by scanning", [](const auto& s, auto& b) { b[s.data[1] + 5] ^= std::byte{1}; },
     Way::kReadAll, Code::kCorrupt, [](const auto& s) { return s.data[1]; }, "arch/data/0"},
    {"data byte flipped, skipped", [](const auto& s, auto& b) { b[s.data[1] + 5] ^= std::byte{1}; }, Way::kSkip,
     Code::kCorrupt, [](const auto& s) { return s.data[1]; }, "arch/data/0"},
    {"descriptor size wrong, size declared",
     [](const auto& s, auto& b) { Put32(b, s.data[1] + 100 + 4 + kDescriptorCompressedSizeOffset, 99); }, Way::kDeclareAndRead, Code::kCorrupt,
     [](const auto& s) { return s.data[1] + 100; }, "arch/data/0"},
    {"descriptor signature wrong",
     [](const auto& s, auto& b) { Put32(b, s.data[1] + 100, 0x08074b51); }, Way::kDeclareAndRead, Code::kCorrupt,
     [](const auto& s) { return s.data[1] + 100; }, "arch/data/0"},
    {"local header signature", [](const auto& s, auto& b) { Put32(b, s.header[2], 0x04034b51); }, Way::kReadAll,
     Code::kCorrupt, [](const auto& s) { return s.header[2]; }, ""},
    {"local header method", [](const auto& s, auto& b) { Put16(b, s.header[2] + kLocalMethodOffset, 12); },
     Way::kReadAll, Code::kUnsupported, [](const auto& s) { return s.header[2] + kLocalMethodOffset; },
     "arch/data/1"},
    {"local header encrypted", [](const auto& s, auto& b) { Put16(b, s.header[2] + kLocalFlagsOffset, 0x0809); },
     Way::kReadAll, Code::kUnsupported, [](const auto& s) { return s.header[2] + kLocalFlagsOffset; },
     "arch/data/1"},
    {"local name with ..", [](const auto& s, auto& b) { PutText(b, s.header[2] + kLocalFileHeaderSize, "../"); },
     Way::kReadAll, Code::kCorrupt, [](const auto& s) { return s.header[2] + kLocalFileHeaderSize; },
     "../h/data/1"},
    {"duplicate local name",
     [](const auto& s, auto& b) { PutText(b, s.header[2] + kLocalFileHeaderSize, "arch/data/0"); }, Way::kReadAll,
     Code::kCorrupt, [](const auto& s) { return s.header[2]; }, "arch/data/0"},
    {"central directory name differs",
     [](const auto& s, auto& b) { PutText(b, s.central[2] + kCentralFileHeaderSize, "arch/data/7"); },
     Way::kReadAll, Code::kCorrupt, [](const auto& s) { return s.central[2]; }, "arch/data/1"},
    {"central directory CRC differs",
     [](const auto& s, auto& b) { Put32(b, s.central[3] + kCentralCrcOffset, 7); }, Way::kSkip, Code::kCorrupt,
     [](const auto& s) { return s.central[3]; }, "arch/version"},
    {"central directory offset differs",
     [](const auto& s, auto& b) { Put32(b, s.central[0] + kCentralLocalHeaderOffsetOffset, 1); }, Way::kSkip,
     Code::kCorrupt, [](const auto& s) { return s.central[0]; }, "arch/data.pkl"},
    {"end records count one entry less",
     [](const auto& s, auto& b) {
       Put16(b, s.eocd + kEndEntriesOnDiskOffset, 3);
       Put16(b, s.eocd + kEndEntriesOffset, 3);
       testing::Put64(b, s.zip64 + kZip64EndEntriesOnDiskOffset, 3);
       testing::Put64(b, s.zip64 + kZip64EndEntriesOffset, 3);
     },
     Way::kSkip, Code::kCorrupt, [](const auto& s) { return s.zip64; }, ""},
};

// Consumes every entry `way` (kReadAll or kSkip), then Finish.
Status ConsumeAll(std::span<const std::byte> bytes, size_t chunk, Way way) {
  io::MemStreamSource src("small.zip", std::vector<std::byte>(bytes.begin(), bytes.end()), chunk);
  StreamReader r(&src);
  while (true) {
    ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
    if (e == nullptr) break;
    if (way == Way::kReadAll) ZF_TRY(r.ReadAll(1000).status());
  }
  return r.Finish();
}

TEST_CASE("corrupt streams fail with their code, offset and record") {
  const testing::SmallArchive s = BuildSmall();
  for (const StreamBadCase& c : kStreamBadCases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    std::vector<std::byte> b = s.bytes;
    c.mutate(s, b);
    // DeclareAndRead needs the sizes: take them from the intact archive.
    Status st;
    if (c.way == Way::kDeclareAndRead) {
      io::MemStreamSource src("small.zip", b, 3);
      StreamReader r(&src);
      st = [&]() -> Status {
        for (size_t i = 0;; ++i) {
          ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
          if (e == nullptr) break;
          ZF_TRY(r.DeclareSize(ReadArchiveBytes(s.bytes)->entries[i].size));
          ZF_TRY(r.FinishEntry());
        }
        return r.Finish();
      }();
      if (!st.ok()) CHECK_EQ(r.Next().status().code(), st.code());  // errors are sticky
    } else {
      st = ConsumeAll(b, 3, c.way);
    }
    CAPTURE(st.ToString());
    CHECK_EQ(st.code(), c.code);
    CHECK_EQ(st.offset(), c.offset(s));
    CHECK_EQ(st.record(), c.record);
  }
}

TEST_CASE("every strict prefix of a stream fails; the whole succeeds") {
  const testing::SmallArchive s = BuildSmall();
  for (Way way : {Way::kReadAll, Way::kSkip}) {
    REQUIRE(ConsumeAll(s.bytes, 1 << 20, way).ok());
    for (size_t n = 0; n < s.bytes.size(); ++n) {
      CAPTURE(n);
      Status st = ConsumeAll(std::span(s.bytes).first(n), 1 << 20, way);
      REQUIRE_FALSE(st.ok());
      REQUIRE((st.code() == Code::kCorrupt || st.code() == Code::kUnsupported));
    }
  }
}

TEST_CASE("stream reader limits and misuse") {
  const testing::SmallArchive s = BuildSmall();
  {
    io::MemStreamSource src("small.zip", s.bytes);
    StreamReader r(&src);
    CHECK_EQ(r.DeclareSize(1).code(), Code::kInvalidArgument);
    CHECK_EQ(r.Finish().code(), Code::kInvalidArgument);
    REQUIRE(r.Next().ok());
    REQUIRE(r.ReadAll(1000).ok());
    REQUIRE(r.Next().ok());  // arch/data/0, 100 bytes of unknown size
    Result<std::vector<std::byte>> big = r.ReadAll(99);
    CHECK_EQ(big.status().code(), Code::kLimit);
    CHECK_EQ(big.status().offset(), s.data[1]);
    CHECK_EQ(big.status().record(), "arch/data/0");
  }
  {
    io::MemStreamSource src("small.zip", s.bytes);
    ReadOptions few;
    few.max_entries = 2;
    StreamReader r(&src, few);
    REQUIRE(r.Next().ok());
    REQUIRE(r.Next().ok());
    Status st = r.Next().status();
    CHECK_EQ(st.code(), Code::kLimit);
    CHECK_EQ(st.offset(), s.header[2]);
  }
  {
    io::MemStreamSource src("small.zip", s.bytes);
    StreamReader r(&src);
    REQUIRE(r.Next().ok());
    CHECK(r.DeclareSize(20).ok());
    std::byte b[5];
    REQUIRE_EQ(r.Read(b).value(), 5u);
    CHECK_EQ(r.DeclareSize(20).code(), Code::kOk);  // same size again is fine
    CHECK_EQ(r.Next().value()->name, "arch/data/0");
  }
  {
    // A local header that states its size disagrees with a declared one.
    const std::vector<std::byte> py = ReadFileBytes(SourceRoot() + "/fixtures/zip/python_rewrite.pt");
    io::MemStreamSource src("python_rewrite.pt", py);
    StreamReader r(&src);
    const StreamEntry* e = r.Next().value();
    Status st = r.DeclareSize(e->size + 1);
    CHECK_EQ(st.code(), Code::kCorrupt);
    CHECK_EQ(st.offset(), 0u);
  }
}

TEST_CASE("stream error messages") {
  const testing::SmallArchive s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  b[s.data[1]] ^= std::byte{1};
  Status st = ConsumeAll(b, 1 << 20, Way::kReadAll);
  CHECK(st.message().starts_with("CRC-32 of the data is 0x"));
  CHECK(st.message().find(", the data descriptor says 0x") != std::string::npos);
  st = ConsumeAll(std::span(s.bytes).first(s.cd_offset), 1 << 20, Way::kSkip);
  CHECK_EQ(st.ToString(), "@ " + std::to_string(s.cd_offset) + ": corrupt: stream ends before the central directory");
}

}  // namespace
}  // namespace zerofold::zip

namespace zerofold::zip {
namespace {

// Reads every entry of a streamed archive whole (ReadAll, or Read after
// DeclareSize with the file form's size), then the central directory.
Status StreamDeflated(const std::vector<std::byte>& bytes, size_t chunk, bool declare,
                      std::vector<std::vector<std::byte>>* out) {
  io::MemStreamSource src("views_streamed.pt", bytes, chunk);
  StreamReader r(&src);
  Result<Archive> ar = ReadArchiveBytes(bytes);
  while (true) {
    ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
    if (e == nullptr) break;
    if (declare && ar.ok() && e->name.find("/data/") != std::string::npos) {
      const Entry* fe = ar->FindFullName(e->name);
      if (fe == nullptr) return Status::Internal("no such entry in the file form");
      ZF_TRY(r.DeclareSize(fe->size));
      std::vector<std::byte> data(fe->size);
      size_t filled = 0;
      while (filled < data.size()) {
        ZF_ASSIGN_OR_RETURN(size_t got, r.Read(std::span(data).subspan(filled)));
        if (got == 0) return Status::Internal("Read returned 0 early");
        filled += got;
      }
      ZF_TRY(r.FinishEntry());
      out->push_back(std::move(data));
    } else {
      ZF_ASSIGN_OR_RETURN(std::vector<std::byte> data, r.ReadAll(1 << 20));
      out->push_back(std::move(data));
    }
  }
  return r.Finish();
}

TEST_CASE("stream reader: deflated entries with data descriptors read as the file form does") {
  const std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/views_streamed.pt");
  REQUIRE(!bytes.empty());
  Result<Archive> ar = ReadArchiveBytes(bytes);
  REQUIRE_MESSAGE(ar.ok(), ar.status().ToString());
  io::MemSource file("views_streamed.pt", bytes);
  std::vector<std::vector<std::byte>> want;
  for (const Entry& e : ar->entries) {
    CHECK(e.deflated());
    want.push_back(ReadEntry(file, e, 1 << 20).value());
  }
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1} << 20}) {
    for (bool declare : {false, true}) {
      CAPTURE(chunk);
      CAPTURE(declare);
      std::vector<std::vector<std::byte>> got;
      Status s = StreamDeflated(bytes, chunk, declare, &got);
      REQUIRE_MESSAGE(s.ok(), s.ToString());
      CHECK(got == want);
    }
  }
}

TEST_CASE("stream reader: a deflated archive cut or corrupted at any byte fails or reads the same bytes") {
  const std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/views_streamed.pt");
  REQUIRE(!bytes.empty());
  std::vector<std::vector<std::byte>> want;
  REQUIRE(StreamDeflated(bytes, 7, false, &want).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<std::vector<std::byte>> got;
    const Status s = StreamDeflated(cut, 5, false, &got);
    CHECK_EQ(s.code(), Code::kCorrupt);
  }
  for (size_t at = 0; at < bytes.size(); ++at) {
    CAPTURE(at);
    std::vector<std::byte> bad = bytes;
    bad[at] ^= std::byte{0x5a};
    std::vector<std::vector<std::byte>> got;
    const Status s = StreamDeflated(bad, 64, false, &got);
    if (s.ok()) CHECK(got == want);
  }
}

}  // namespace
}  // namespace zerofold::zip
