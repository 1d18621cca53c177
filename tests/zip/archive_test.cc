#include "zip/archive.h"
#include "zip/entry_source.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "test_util.h"
#include "zip/format.h"
#include "zip/torch_layout.h"
#include "zip/writer.h"

namespace zerofold::zip {
namespace {

using testing::Put16;
using testing::Put32;
using testing::Put64;
using testing::PutText;
using testing::ReadFileBytes;
using testing::SourceRoot;
using Small = testing::SmallArchive;
using testing::BuildSmall;

// Offsets of fields within records, from the spec layout (format.h).
constexpr uint64_t kCdFlags = kCentralFlagsOffset;
constexpr uint64_t kCdMethod = kCentralMethodOffset;
constexpr uint64_t kCdCompressed = kCentralCompressedSizeOffset;
constexpr uint64_t kCdUncompressed = kCentralUncompressedSizeOffset;
constexpr uint64_t kCdExtraLength = kCentralExtraLengthOffset;
constexpr uint64_t kCdHeaderOffset = kCentralLocalHeaderOffsetOffset;
constexpr uint64_t kEocdDisk = kEndDiskOffset;
constexpr uint64_t kEocdEntriesOnDisk = kEndEntriesOnDiskOffset;
constexpr uint64_t kEocdEntries = kEndEntriesOffset;
constexpr uint64_t kEocdCdSize = kEndCdSizeOffset;
constexpr uint64_t kEocdCdOffset = kEndCdOffsetOffset;
constexpr uint64_t kLocZip64Offset = kZip64LocatorRecordOffsetOffset;
constexpr uint64_t kLocTotalDisks = kZip64LocatorTotalDisksOffset;
constexpr uint64_t kZ64RecordSize = kZip64EndRecordSizeOffset;
constexpr uint64_t kZ64Disk = kZip64EndDiskOffset;
constexpr uint64_t kZ64EntriesOnDisk = kZip64EndEntriesOnDiskOffset;
constexpr uint64_t kZ64Entries = kZip64EndEntriesOffset;
constexpr uint64_t kZ64CdSize = kZip64EndCdSizeOffset;

Status ReadAndLocate(std::span<const std::byte> bytes) { return testing::ReadLocatedArchiveBytes(bytes).status(); }

struct BadCase {
  const char* name;
  std::function<void(const Small&, std::vector<std::byte>&)> mutate;
  Code code;
  std::function<uint64_t(const Small&)> offset;
  const char* record;  // "" when the error precedes the entry's name
};

const BadCase kBadCases[] = {
    {"central signature", [](const Small& s, auto& b) { Put32(b, s.central[1], 0x02014b51); },
     Code::kCorrupt, [](const Small& s) { return s.central[1]; }, ""},
    {"method bzip2", [](const Small& s, auto& b) { Put16(b, s.central[1] + kCdMethod, 12); },
     Code::kUnsupported, [](const Small& s) { return s.central[1] + kCdMethod; }, "arch/data/0"},
    {"method deflate in the central directory only",
     [](const Small& s, auto& b) { Put16(b, s.central[1] + kCdMethod, kMethodDeflated); }, Code::kCorrupt,
     [](const Small& s) { return s.header[1] + kLocalMethodOffset; }, "arch/data/0"},
    {"encrypted flag", [](const Small& s, auto& b) { Put16(b, s.central[1] + kCdFlags, 0x0809); },
     Code::kUnsupported, [](const Small& s) { return s.central[1] + kCdFlags; }, "arch/data/0"},
    {"sizes point past the central directory",
     [](const Small& s, auto& b) {
       Put32(b, s.central[2] + kCdCompressed, 0x7FFFFFFF);
       Put32(b, s.central[2] + kCdUncompressed, 0x7FFFFFFF);
     },
     Code::kCorrupt, [](const Small& s) { return s.central[2] + kCdCompressed; }, "arch/data/1"},
    {"sizes point past the end of the file",
     [](const Small& s, auto& b) {
       Put32(b, s.central[3] + kCdCompressed, 0xFFFFFFFE);
       Put32(b, s.central[3] + kCdUncompressed, 0xFFFFFFFE);
     },
     Code::kCorrupt, [](const Small& s) { return s.central[3] + kCdCompressed; }, "arch/version"},
    {"compressed and uncompressed sizes differ",
     [](const Small& s, auto& b) { Put32(b, s.central[2] + kCdCompressed, 41); }, Code::kCorrupt,
     [](const Small& s) { return s.central[2] + kCdCompressed; }, "arch/data/1"},
    {"zip64 marker without a zip64 field",
     [](const Small& s, auto& b) { Put32(b, s.central[1] + kCdCompressed, 0xFFFFFFFF); }, Code::kCorrupt,
     [](const Small& s) { return s.central[1] + kCdCompressed; }, "arch/data/0"},
    {"header offset inside the central directory",
     [](const Small& s, auto& b) { Put32(b, s.central[3] + kCdHeaderOffset, static_cast<uint32_t>(s.cd_offset - 10)); },
     Code::kCorrupt, [](const Small& s) { return s.central[3]; }, "arch/version"},
    {"header offset past the end of the file",
     [](const Small& s, auto& b) { Put32(b, s.central[0] + kCdHeaderOffset, 0x7FFFFFF0); }, Code::kCorrupt,
     [](const Small& s) { return s.central[0]; }, "arch/data.pkl"},
    {"header offset at another entry",
     [](const Small& s, auto& b) { Put32(b, s.central[3] + kCdHeaderOffset, static_cast<uint32_t>(s.header[2])); },
     Code::kCorrupt, [](const Small& s) { return s.central[3]; }, "arch/version"},
    {"duplicate name",
     [](const Small& s, auto& b) {
       PutText(b, s.central[2] + kCentralFileHeaderSize, "arch/data/0");
       PutText(b, s.header[2] + kLocalFileHeaderSize, "arch/data/0");
     },
     Code::kAmbiguous, [](const Small& s) { return s.central[2]; }, "arch/data/0"},
    {"overlapping entries",
     [](const Small& s, auto& b) {
       Put32(b, s.central[1] + kCdCompressed, 164);
       Put32(b, s.central[1] + kCdUncompressed, 164);
     },
     Code::kCorrupt, [](const Small& s) { return s.data[1]; }, "arch/data/0"},
    {"name with ..",
     [](const Small& s, auto& b) {
       PutText(b, s.central[1] + kCentralFileHeaderSize, "../h/data/0");
       PutText(b, s.header[1] + kLocalFileHeaderSize, "../h/data/0");
     },
     Code::kCorrupt, [](const Small& s) { return s.central[1] + kCentralFileHeaderSize; }, "../h/data/0"},
    {"absolute name", [](const Small& s, auto& b) { PutText(b, s.central[1] + kCentralFileHeaderSize, "/"); },
     Code::kCorrupt, [](const Small& s) { return s.central[1] + kCentralFileHeaderSize; }, "/rch/data/0"},
    {"backslash in name",
     [](const Small& s, auto& b) { PutText(b, s.central[1] + kCentralFileHeaderSize + 4, "\\"); }, Code::kCorrupt,
     [](const Small& s) { return s.central[1] + kCentralFileHeaderSize; }, "arch\\data/0"},
    {"extra field overruns its length",
     [](const Small& s, auto& b) { Put16(b, s.central[0] + kCdExtraLength, 4); }, Code::kCorrupt,
     [](const Small& s) { return s.central[0] + kCentralFileHeaderSize + s.names[0].size(); }, "arch/data.pkl"},
    {"local header signature", [](const Small& s, auto& b) { Put32(b, s.header[2], 0x04034b51); },
     Code::kCorrupt, [](const Small& s) { return s.header[2]; }, "arch/data/1"},
    {"local header method", [](const Small& s, auto& b) { Put16(b, s.header[2] + kLocalMethodOffset, 12); },
     Code::kUnsupported, [](const Small& s) { return s.header[2] + kLocalMethodOffset; }, "arch/data/1"},
    {"local header method deflate only there",
     [](const Small& s, auto& b) { Put16(b, s.header[2] + kLocalMethodOffset, kMethodDeflated); }, Code::kCorrupt,
     [](const Small& s) { return s.header[2] + kLocalMethodOffset; }, "arch/data/1"},
    {"local header name",
     [](const Small& s, auto& b) { PutText(b, s.header[2] + kLocalFileHeaderSize, "arch/data/2"); },
     Code::kAmbiguous, [](const Small& s) { return s.header[2] + kLocalFileHeaderSize; }, "arch/data/1"},
    {"end record count disagrees with zip64",
     [](const Small& s, auto& b) { Put16(b, s.eocd + kEocdEntries, 5); }, Code::kCorrupt,
     [](const Small& s) { return s.eocd + kEocdEntries; }, ""},
    {"zip64 counts disagree with the end record",
     [](const Small& s, auto& b) {
       Put64(b, s.zip64 + kZ64EntriesOnDisk, 5);
       Put64(b, s.zip64 + kZ64Entries, 5);
     },
     Code::kCorrupt, [](const Small& s) { return s.eocd + kEocdEntriesOnDisk; }, ""},
    {"zip64 counts disagree with each other",
     [](const Small& s, auto& b) { Put64(b, s.zip64 + kZ64EntriesOnDisk, 3); }, Code::kCorrupt,
     [](const Small& s) { return s.zip64 + kZ64EntriesOnDisk; }, ""},
    {"fewer entries than the central directory holds",
     [](const Small& s, auto& b) {
       Put16(b, s.eocd + kEocdEntriesOnDisk, 3);
       Put16(b, s.eocd + kEocdEntries, 3);
       Put64(b, s.zip64 + kZ64EntriesOnDisk, 3);
       Put64(b, s.zip64 + kZ64Entries, 3);
     },
     Code::kCorrupt, [](const Small& s) { return s.central[3]; }, ""},
    {"more entries than the central directory can hold",
     [](const Small& s, auto& b) {
       Put16(b, s.eocd + kEocdEntriesOnDisk, 100);
       Put16(b, s.eocd + kEocdEntries, 100);
       Put64(b, s.zip64 + kZ64EntriesOnDisk, 100);
       Put64(b, s.zip64 + kZ64Entries, 100);
     },
     Code::kCorrupt, [](const Small& s) { return s.zip64; }, ""},
    {"a trillion entries",
     [](const Small& s, auto& b) {
       Put16(b, s.eocd + kEocdEntriesOnDisk, 0xFFFF);
       Put16(b, s.eocd + kEocdEntries, 0xFFFF);
       Put64(b, s.zip64 + kZ64EntriesOnDisk, 1ull << 40);
       Put64(b, s.zip64 + kZ64Entries, 1ull << 40);
     },
     Code::kLimit, [](const Small& s) { return s.zip64; }, ""},
    {"central directory ends before the end records",
     [](const Small& s, auto& b) {
       Put32(b, s.eocd + kEocdCdSize, static_cast<uint32_t>(s.cd_size - 1));
       Put64(b, s.zip64 + kZ64CdSize, s.cd_size - 1);
     },
     Code::kCorrupt, [](const Small& s) { return s.cd_offset + s.cd_size - 1; }, ""},
    {"central directory runs into the end records",
     [](const Small& s, auto& b) {
       Put32(b, s.eocd + kEocdCdSize, static_cast<uint32_t>(s.cd_size + 1));
       Put64(b, s.zip64 + kZ64CdSize, s.cd_size + 1);
     },
     Code::kCorrupt, [](const Small& s) { return s.cd_offset; }, ""},
    {"central directory size 2^64-1",
     [](const Small& s, auto& b) {
       Put32(b, s.eocd + kEocdCdSize, 0xFFFFFFFF);
       Put64(b, s.zip64 + kZ64CdSize, UINT64_MAX);
     },
     Code::kCorrupt, [](const Small& s) { return s.cd_offset; }, ""},
    {"zip64 record past the locator", [](const Small& s, auto& b) { Put64(b, s.locator + kLocZip64Offset, 1ull << 40); },
     Code::kCorrupt, [](const Small& s) { return s.locator; }, ""},
    {"zip64 record signature", [](const Small& s, auto& b) { Put32(b, s.zip64, 0x06064b51); }, Code::kCorrupt,
     [](const Small& s) { return s.zip64; }, ""},
    {"zip64 record size", [](const Small& s, auto& b) { Put64(b, s.zip64 + kZ64RecordSize, 45); },
     Code::kCorrupt, [](const Small& s) { return s.zip64 + kZ64RecordSize; }, ""},
    {"multi-disk locator", [](const Small& s, auto& b) { Put32(b, s.locator + kLocTotalDisks, 2); },
     Code::kUnsupported, [](const Small& s) { return s.locator; }, ""},
    {"multi-disk zip64 record", [](const Small& s, auto& b) { Put32(b, s.zip64 + kZ64Disk, 1); },
     Code::kUnsupported, [](const Small& s) { return s.zip64 + kZ64Disk; }, ""},
    {"end record disk disagrees with zip64", [](const Small& s, auto& b) { Put16(b, s.eocd + kEocdDisk, 1); },
     Code::kCorrupt, [](const Small& s) { return s.eocd + kEocdDisk; }, ""},
};

TEST_CASE("the small archive reads back with the offsets its layout predicts") {
  const Small s = BuildSmall();
  Result<Archive> a = ReadArchiveBytes(s.bytes);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  REQUIRE_EQ(a->entries.size(), s.names.size());
  for (size_t i = 0; i < s.names.size(); ++i) {
    CHECK_EQ(a->entries[i].name, s.names[i]);
    CHECK_EQ(a->entries[i].header_offset, s.header[i]);
    CHECK_EQ(LocateEntry(io::MemSource("small.zip", s.bytes), a->entries[i])->data_offset, s.data[i]);
  }
  CHECK_EQ(a->top_folder, "arch");
}

TEST_CASE("each corrupted field fails with its code, offset and record") {
  const Small s = BuildSmall();
  for (const BadCase& c : kBadCases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    std::vector<std::byte> b = s.bytes;
    c.mutate(s, b);
    Status st = ReadAndLocate(b);
    CAPTURE(st.ToString());
    CHECK_EQ(st.code(), c.code);
    CHECK_EQ(st.offset(), c.offset(s));
    CHECK_EQ(st.record(), c.record);
  }
}

TEST_CASE("ReadArchive reads no local header; an entry's is read and checked when it is opened") {
  const Small s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  Put32(b, s.header[2], 0x04034b51);
  io::MemSource mem("small.zip", b);
  testing::FailingSource counter(&mem, UINT64_MAX);
  Result<Archive> a = ReadArchive(counter);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  // The end records (zip64 included) and the central directory, however
  // many entries: none of the local headers.
  const uint64_t archive_reads = counter.reads();
  CHECK_EQ(archive_reads, 5u);
  for (size_t i = 0; i < s.names.size(); ++i) {
    CAPTURE(i);
    const Entry& e = a->entries[i];
    CHECK_FALSE(e.located());
    CHECK_EQ(e.room_end, i + 1 < s.names.size() ? s.header[i + 1] : s.cd_offset);
    Result<Entry> located = LocateEntry(counter, e);
    if (i == 2) {
      CHECK_EQ(located.status().code(), Code::kCorrupt);
      CHECK_EQ(located.status().record(), "arch/data/1");
      CHECK_EQ(located.status().offset(), s.header[2]);
      CHECK_EQ(ReadEntry(counter, e, 1000).status().offset(), s.header[2]);
      continue;
    }
    REQUIRE_MESSAGE(located.ok(), located.status().ToString());
    CHECK_EQ(located->data_offset, s.data[i]);
    const uint64_t before = counter.reads();
    CHECK_EQ(LocateEntry(counter, *located)->data_offset, s.data[i]);  // located: no read
    CHECK_EQ(counter.reads(), before);
  }
  CHECK_EQ(counter.reads(), archive_reads + s.names.size() + 1);  // one per local header, one by ReadEntry
}

TEST_CASE("every strict prefix of an archive fails as corrupt or unsupported") {
  const std::vector<std::byte> archives[] = {
      BuildSmall().bytes,
      ReadFileBytes(SourceRoot() + "/fixtures/zip/python_rewrite.pt"),
  };
  for (const std::vector<std::byte>& whole : archives) {
    REQUIRE(ReadArchiveBytes(whole).ok());
    for (size_t n = 0; n < whole.size(); ++n) {
      CAPTURE(n);
      Status st = ReadArchiveBytes(std::span(whole).first(n)).status();
      REQUIRE_FALSE(st.ok());
      REQUIRE((st.code() == Code::kCorrupt || st.code() == Code::kUnsupported));
    }
  }
}

TEST_CASE("limits are checked before the central directory is read") {
  const Small s = BuildSmall();
  ReadOptions few;
  few.max_entries = 3;
  Status st = ReadArchiveBytes(s.bytes, few).status();
  CHECK_EQ(st.code(), Code::kLimit);
  CHECK_EQ(st.offset(), s.zip64);
  ReadOptions small_cd;
  small_cd.max_central_directory_bytes = s.cd_size - 1;
  st = ReadArchiveBytes(s.bytes, small_cd).status();
  CHECK_EQ(st.code(), Code::kLimit);
  CHECK_EQ(st.offset(), s.cd_offset);
  small_cd.max_central_directory_bytes = s.cd_size;
  CHECK(ReadArchiveBytes(s.bytes, small_cd).ok());
}

TEST_CASE("ReadEntry checks the CRC and the size limit") {
  Small s = BuildSmall();
  s.bytes[s.data[1] + 5] ^= std::byte{0x40};
  io::MemSource src("small.zip", s.bytes);
  Result<Archive> a = ReadArchive(src);
  REQUIRE(a.ok());  // the central directory does not cover data
  CHECK(ReadEntry(src, a->entries[0], 1000).ok());
  Status crc = ReadEntry(src, a->entries[1], 1000).status();
  CHECK_EQ(crc.code(), Code::kCorrupt);
  CHECK_EQ(crc.offset(), s.data[1]);
  CHECK_EQ(crc.record(), "arch/data/0");
  Status limit = ReadEntry(src, a->entries[1], 99).status();
  CHECK_EQ(limit.code(), Code::kLimit);
  CHECK_EQ(limit.record(), "arch/data/0");
  CHECK(ReadEntry(src, a->entries[1], 100).status().code() == Code::kCorrupt);
}

TEST_CASE("error messages say what was found and what was expected") {
  const Small s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  Put16(b, s.central[1] + kCdMethod, 12);
  CHECK_EQ(ReadArchiveBytes(b).status().ToString(),
           "arch/data/0 @ " + std::to_string(s.central[1] + kCdMethod) +
               ": unsupported: compression method 12 (bzip2); only stored (method 0) and deflated (method 8) "
               "entries are read");
  b = s.bytes;
  Put16(b, s.central[1] + kCdMethod, kMethodDeflated);
  CHECK_EQ(ReadAndLocate(b).ToString(),
           "arch/data/0 @ " + std::to_string(s.header[1] + kLocalMethodOffset) +
               ": corrupt: local header gives compression method 0 (stored), the central directory 8 (deflate)");
  b = s.bytes;
  Put32(b, s.header[2], 0x04034b51);
  CHECK_EQ(ReadAndLocate(b).message(), "local header signature is 0x04034b51, expected 0x04034b50");
  b = s.bytes;
  Put32(b, s.central[1] + kCdCompressed, 164);
  Put32(b, s.central[1] + kCdUncompressed, 164);
  CHECK_EQ(ReadAndLocate(b).ToString(),
           "arch/data/0 @ " + std::to_string(s.data[1]) + ": corrupt: entry data (164 bytes at " +
               std::to_string(s.data[1]) + ") runs past the next local header or the central directory at " +
               std::to_string(s.header[2]));
  CHECK_EQ(ReadArchiveBytes(std::span(s.bytes).first(21)).status().message(),
           "file of 21 bytes is too small for a zip end of central directory record (22 bytes)");
  CHECK_EQ(ReadArchiveBytes(std::span(s.bytes).first(100)).status().message(),
           "no end of central directory record in the last 100 bytes: not a zip archive, or truncated");
}

TEST_CASE("a torch-written file reads to the values zipfile lists") {
  const std::string path =
      SourceRoot() + "/fixtures/deepspeed/zero1_ws2_fp16/ckpt/global_step2/mp_rank_00_model_states.pt";
  io::MemSource src(path, ReadFileBytes(path));
  Result<Archive> a = testing::ReadLocatedArchive(src);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  struct Want {
    const char* name;
    uint64_t header_offset;
    uint64_t size;
  };
  // Python: [(i.filename, i.header_offset, i.file_size) for i in ZipFile(path).infolist()]
  const Want kWant[] = {
      {"mp_rank_00_model_states/data.pkl", 0, 6509},  {"mp_rank_00_model_states/data/0", 6653, 72},
      {"mp_rank_00_model_states/data/1", 6808, 136},  {"mp_rank_00_model_states/data/2", 7064, 16648},
      {"mp_rank_00_model_states/data/3", 23832, 1224}, {"mp_rank_00_model_states/data/4", 25176, 63072},
      {"mp_rank_00_model_states/version", 88368, 2},
  };
  REQUIRE_EQ(a->entries.size(), std::size(kWant));
  for (size_t i = 0; i < std::size(kWant); ++i) {
    CAPTURE(i);
    const Entry& e = a->entries[i];
    CHECK_EQ(e.name, kWant[i].name);
    CHECK_EQ(e.header_offset, kWant[i].header_offset);
    CHECK_EQ(e.size, kWant[i].size);
    CHECK_EQ(e.data_offset % kTorchDataAlignment, 0u);
    CHECK(ReadEntry(src, e, 1 << 20).ok());
  }
  CHECK_EQ(a->entries[0].crc32, 0xdd47d897u);
  CHECK_EQ(a->top_folder, "mp_rank_00_model_states");
  REQUIRE(a->Find("data/3") != nullptr);
  CHECK_EQ(a->Find("data/3")->size, 1224u);
  CHECK_EQ(a->Find("data/5"), nullptr);
  CHECK_EQ(a->Find("mp_rank_00_model_states/data/3"), nullptr);
  CHECK_EQ(a->FindFullName("mp_rank_00_model_states/version")->size, 2u);
  CHECK_EQ(io::AsChars(ReadEntry(src, *a->Find("version"), 16).value()), "3\n");
}

TEST_CASE("an archive rewritten by Python's zipfile (no descriptors, no alignment, no zip64) reads the same") {
  io::MemSource torch_src("torch_small.pt", ReadFileBytes(SourceRoot() + "/fixtures/zip/torch_small.pt"));
  io::MemSource py_src("python_rewrite.pt", ReadFileBytes(SourceRoot() + "/fixtures/zip/python_rewrite.pt"));
  Result<Archive> t = ReadArchive(torch_src);
  Result<Archive> p = testing::ReadLocatedArchive(py_src);
  REQUIRE(t.ok());
  REQUIRE_MESSAGE(p.ok(), p.status().ToString());
  REQUIRE_EQ(p->entries.size(), t->entries.size());
  CHECK_EQ(p->top_folder, "torch_small");
  bool unaligned = false;
  for (size_t i = 0; i < t->entries.size(); ++i) {
    CAPTURE(t->entries[i].name);
    CHECK_EQ(p->entries[i].name, t->entries[i].name);
    CHECK_EQ(p->entries[i].crc32, t->entries[i].crc32);
    unaligned |= p->entries[i].data_offset % kTorchDataAlignment != 0;
    CHECK(ReadEntry(py_src, p->entries[i], 1 << 20).value() == ReadEntry(torch_src, t->entries[i], 1 << 20).value());
  }
  CHECK(unaligned);
}

// python_rewrite.pt has a plain end record (no zip64) at its very end.
TEST_CASE("end record comments and the fields of a plain end record") {
  const std::vector<std::byte> base = ReadFileBytes(SourceRoot() + "/fixtures/zip/python_rewrite.pt");
  const uint64_t eocd = base.size() - kEndOfCentralDirSize;
  auto with_comment = [&](std::string_view comment, uint16_t declared) {
    std::vector<std::byte> b = base;
    Put16(b, eocd + kEndOfCentralDirCommentLengthOffset, declared);
    std::span<const std::byte> c = io::AsBytes(comment);
    b.insert(b.end(), c.begin(), c.end());
    return b;
  };
  CHECK(ReadArchiveBytes(with_comment("hello", 5)).ok());
  // A comment that holds an end record signature of its own.
  std::string tricky = "x";
  tricky += std::string("PK\x05\x06", 4);
  tricky += std::string(30, '\0');
  // torch's miniz takes the last signature with 22 bytes after it, this
  // one, and zerofold the record whose comment reaches the end: ambiguous.
  Status hidden = ReadArchiveBytes(with_comment(tricky, static_cast<uint16_t>(tricky.size()))).status();
  CHECK_EQ(hidden.code(), Code::kAmbiguous);
  CHECK_EQ(hidden.offset(), eocd + kEndOfCentralDirSize + 1);
  // A signature with fewer than 22 bytes after it is no record to miniz either.
  const std::string short_tail = "x" + std::string("PK\x05\x06", 4) + std::string(17, '\0');
  CHECK(ReadArchiveBytes(with_comment(short_tail, static_cast<uint16_t>(short_tail.size()))).ok());
  CHECK(ReadArchiveBytes(with_comment(std::string(65535, 'c'), 65535)).ok());
  // Past the first 4096-byte tail scanned, with a false signature inside it.
  const std::string long_tricky = std::string(5000, 'c') + short_tail;
  CHECK(ReadArchiveBytes(with_comment(long_tricky, static_cast<uint16_t>(long_tricky.size()))).ok());
  const std::string long_hidden = std::string(5000, 'c') + tricky;
  Status far = ReadArchiveBytes(with_comment(long_hidden, static_cast<uint16_t>(long_hidden.size()))).status();
  CHECK_EQ(far.code(), Code::kAmbiguous);
  CHECK_EQ(far.offset(), eocd + kEndOfCentralDirSize + 5001);
  // Bytes after the end record that its comment length does not cover.
  Status trailing = ReadArchiveBytes(with_comment("abc", 0)).status();
  CHECK_EQ(trailing.code(), Code::kCorrupt);
  CHECK_EQ(trailing.offset(), 0u);  // the whole (small) file was scanned

  struct Case {
    const char* name;
    uint64_t field;
    uint32_t value;
    int width;
    Code code;
    uint64_t offset;
  };
  const Case kCases[] = {
      {"disk", eocd + kEocdDisk, 1, 2, Code::kUnsupported, eocd + kEocdDisk},
      {"entries on disk", eocd + kEocdEntriesOnDisk, 2, 2, Code::kCorrupt, eocd + kEocdEntriesOnDisk},
      {"offset 0xffffffff without zip64", eocd + kEocdCdOffset, 0xFFFFFFFF, 4, Code::kCorrupt, eocd},
      {"central directory offset too small", eocd + kEocdCdOffset, 5, 4, Code::kCorrupt,
       5 + io::DecodeU32le(base.data() + eocd + kEocdCdSize)},
  };
  for (const Case& c : kCases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    std::vector<std::byte> b = base;
    if (c.width == 2) Put16(b, c.field, static_cast<uint16_t>(c.value));
    else Put32(b, c.field, c.value);
    Status st = ReadArchiveBytes(b).status();
    CAPTURE(st.ToString());
    CHECK_EQ(st.code(), c.code);
    CHECK_EQ(st.offset(), c.offset);
  }
}

TEST_CASE("entries without a shared top folder") {
  io::MemSink sink;
  Writer w(&sink);
  const std::byte x[1] = {std::byte{'x'}};
  REQUIRE(w.AddEntry("a/one", x).ok());
  REQUIRE(w.AddEntry("b/two", x).ok());
  REQUIRE(w.AddEntry("three", x).ok());
  REQUIRE(w.Finish().ok());
  Result<Archive> a = ReadArchiveBytes(sink.bytes());
  REQUIRE(a.ok());
  CHECK_EQ(a->top_folder, "");
  CHECK_NE(a->Find("b/two"), nullptr);
  CHECK_NE(a->Find("three"), nullptr);
  CHECK_EQ(a->Find("two"), nullptr);
  // Built by hand (no name index): Find scans.
  Archive manual;
  manual.top_folder = "a";
  manual.entries = a->entries;
  CHECK_EQ(manual.Find("one"), &manual.entries[0]);
  CHECK_EQ(manual.Find("two"), nullptr);
}

}  // namespace
}  // namespace zerofold::zip
