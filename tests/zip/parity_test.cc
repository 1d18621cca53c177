// Archives torch (miniz) and zerofold could read differently are refused as
// ambiguous when opened (zip/central_directory.h, "Parity with torch"); the end record case is in
// archive_test.cc ("end record comments ...").
#include "zip/central_directory.h"
#include "zip/crc32.h"
#include "zip/describe.h"
#include "zip/entry_source.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "test_util.h"
#include "zip/archive.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

using testing::Put16;
using testing::Put32;
using testing::Put64;
using testing::PutText;
using Small = testing::SmallArchive;
using testing::BuildSmall;

Status ReadAndLocate(std::span<const std::byte> bytes) { return testing::ReadLocatedArchiveBytes(bytes).status(); }

// The small archive behind `n` bytes of `fill`, every offset moved by n (as
// `zip -A` adjusts a self-extracting archive): torch reads it as before.
std::vector<std::byte> Prefixed(const Small& s, size_t n, std::byte fill) {
  std::vector<std::byte> b(n, fill);
  b.insert(b.end(), s.bytes.begin(), s.bytes.end());
  auto add32 = [&](uint64_t at) {
    const uint32_t v = io::DecodeU32le(b.data() + n + at);
    if (v != kZip64Marker32) Put32(b, n + at, static_cast<uint32_t>(v + n));
  };
  auto add64 = [&](uint64_t at) { Put64(b, n + at, io::DecodeU64le(b.data() + n + at) + n); };
  for (uint64_t c : s.central) add32(c + kCentralLocalHeaderOffsetOffset);
  add32(s.eocd + kEndCdOffsetOffset);
  add64(s.zip64 + kZip64EndCdOffsetOffset);
  add64(s.locator + kZip64LocatorRecordOffsetOffset);
  return b;
}

TEST_CASE("bytes before the first entry, every offset adjusted, are ambiguous") {
  const Small s = BuildSmall();
  // Sanity: the unshifted archive reads.
  REQUIRE(ReadAndLocate(s.bytes).ok());
  const std::vector<std::byte> b = Prefixed(s, 64, std::byte{'Z'});
  Result<Archive> a = ReadArchiveBytes(b);
  REQUIRE_FALSE(a.ok());
  CHECK_EQ(a.status().code(), Code::kAmbiguous);
  CHECK_EQ(a.status().offset(), 0u);
  CHECK_EQ(a.status().record(), "arch/data.pkl");
  CHECK_NE(a.status().message().find("64 bytes before the first entry"), std::string::npos);
}

TEST_CASE("a hidden local header before the first listed entry is ambiguous") {
  const Small s = BuildSmall();
  // A whole local header (with a name) at 0 that no central entry lists:
  // the file still starts "PK\3\4", as torch.load's _is_zipfile wants.
  std::vector<std::byte> b = Prefixed(s, kLocalFileHeaderSize + 10, std::byte{0});
  Put32(b, 0, kLocalFileHeaderSignature);
  Put16(b, kLocalNameLengthOffset, 10);
  PutText(b, kLocalFileHeaderSize, "arch/evil!");
  Status st = ReadAndLocate(b);
  CHECK_EQ(st.code(), Code::kAmbiguous);
  CHECK_EQ(st.offset(), 0u);
}

TEST_CASE("names equal but for case, as torch's case-insensitive lookup sees them") {
  const Small s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  // arch/data/1 -> arch/DATA/0: miniz's lookup of "arch/data/0" may find it.
  PutText(b, s.central[2] + kCentralFileHeaderSize, "arch/DATA/0");
  PutText(b, s.header[2] + kLocalFileHeaderSize, "arch/DATA/0");
  Status st = ReadAndLocate(b);
  CAPTURE(st.ToString());
  CHECK_EQ(st.code(), Code::kAmbiguous);
  CHECK_EQ(st.record(), "arch/DATA/0");
  CHECK_EQ(st.offset(), s.central[2]);
  CHECK_NE(st.message().find("\"arch/data/0\" and \"arch/DATA/0\""), std::string::npos);
  CHECK_NE(st.message().find("differ only in case"), std::string::npos);
  // Non-ASCII bytes are not folded (MZ_TOLOWER is ASCII only).
  std::vector<std::byte> c = s.bytes;
  PutText(c, s.central[2] + kCentralFileHeaderSize, "arch/data/\xc1");
  PutText(c, s.header[2] + kLocalFileHeaderSize, "arch/data/\xc1");
  CHECK(ReadAndLocate(c).ok());
}

TEST_CASE("a directory entry holding bytes: torch reads none of them") {
  const Small s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  Put32(b, s.central[1] + kCentralExternalAttributesOffset, 0x10);
  Status st = ReadArchiveBytes(b).status();
  CAPTURE(st.ToString());
  CHECK_EQ(st.code(), Code::kAmbiguous);
  CHECK_EQ(st.record(), "arch/data/0");
  CHECK_EQ(st.offset(), s.central[1] + kCentralExternalAttributesOffset);
  // Other attribute bits (Unix modes in the high half, archive 0x20) are fine.
  std::vector<std::byte> ok = s.bytes;
  Put32(ok, s.central[1] + kCentralExternalAttributesOffset, 0x81a40020);
  CHECK(ReadAndLocate(ok).ok());
}

TEST_CASE("flags: patch data is unsupported; encryption only in the local header is ambiguous") {
  const Small s = BuildSmall();
  std::vector<std::byte> patch = s.bytes;
  Put16(patch, s.central[1] + kCentralFlagsOffset, 0x0808 | kFlagPatch);
  Status p = ReadArchiveBytes(patch).status();
  CHECK_EQ(p.code(), Code::kUnsupported);
  CHECK_EQ(p.offset(), s.central[1] + kCentralFlagsOffset);
  std::vector<std::byte> local = s.bytes;
  Put16(local, s.header[1] + kLocalFlagsOffset, 0x0808 | kFlagEncrypted);
  REQUIRE(ReadArchiveBytes(local).ok());  // the central directory says plain
  Status l = ReadAndLocate(local);
  CAPTURE(l.ToString());
  CHECK_EQ(l.code(), Code::kAmbiguous);
  CHECK_EQ(l.record(), "arch/data/0");
  CHECK_EQ(l.offset(), s.header[1] + kLocalFlagsOffset);
}

TEST_CASE("an entry whose size passes the end of the file is refused at open, before any local header") {
  const Small s = BuildSmall();
  std::vector<std::byte> b = s.bytes;
  Put32(b, s.central[3] + kCentralCompressedSizeOffset, 1000);
  Put32(b, s.central[3] + kCentralUncompressedSizeOffset, 1000);
  Status st = ReadArchiveBytes(b).status();  // no LocateEntry
  CHECK_EQ(st.code(), Code::kCorrupt);
  CHECK_EQ(st.record(), "arch/version");
  CHECK_EQ(st.offset(), s.central[3] + kCentralCompressedSizeOffset);
}

TEST_CASE("CRC-32 0 is not recorded") {
  CHECK_FALSE(CrcRecorded(0));
  CHECK(CrcRecorded(1));
}

// A record of 100 bytes and its entry, as StreamedCrc sees it.
struct Record {
  std::vector<std::byte> bytes;
  Entry entry;
};
Record MakeRecord(uint32_t crc_override = 1) {
  Record r;
  for (int i = 0; i < 100; ++i) r.bytes.push_back(std::byte(static_cast<uint8_t>(i * 7)));
  r.entry.name = "arch/data/0";
  r.entry.data_offset = 1000;
  r.entry.size = r.bytes.size();
  r.entry.crc32 = crc_override == 1 ? Crc32(0, r.bytes) : crc_override;
  return r;
}

TEST_CASE("StreamedCrc checks a record read front to back, in any pieces, re-reads included") {
  Record r = MakeRecord();
  std::span<const std::byte> b(r.bytes);
  StreamedCrc whole(r.entry);
  CHECK(whole.See(0, b).ok());
  CHECK(whole.checked());
  StreamedCrc pieces(r.entry);
  CHECK(pieces.See(0, b.first(30)).ok());
  CHECK(pieces.See(10, b.subspan(10, 40)).ok());  // overlaps: folded once
  CHECK(pieces.See(50, b.subspan(50, 50)).ok());
  CHECK(pieces.checked());

  std::vector<std::byte> bad = r.bytes;
  bad[77] ^= std::byte{0x10};
  StreamedCrc flipped(r.entry);
  CHECK(flipped.See(0, std::span<const std::byte>(bad).first(60)).ok());
  Status s = flipped.See(60, std::span<const std::byte>(bad).subspan(60));
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "arch/data/0");
  CHECK_EQ(s.offset(), 1000u);
  CHECK_EQ(s.message(), "CRC-32 of the record's 100 bytes is " + Hex(Crc32(0, bad), 8) +
                            ", the central directory says " + Hex(r.entry.crc32, 8));
}

TEST_CASE("StreamedCrc does not check a part of a record, nor a CRC of 0") {
  Record r = MakeRecord();
  std::vector<std::byte> bad = r.bytes;
  bad[5] ^= std::byte{1};
  std::span<const std::byte> b(bad);
  StreamedCrc gap(r.entry);
  CHECK(gap.See(0, b.first(10)).ok());
  CHECK(gap.See(20, b.subspan(20)).ok());  // bytes 10..20 skipped: not checked
  CHECK_FALSE(gap.checked());
  // A new pass from 0 is checked again.
  CHECK_EQ(gap.See(0, b).code(), Code::kCorrupt);
  StreamedCrc tail(r.entry);
  CHECK(tail.See(50, b.subspan(50)).ok());
  CHECK_FALSE(tail.checked());
  Record zero = MakeRecord(0);
  StreamedCrc unrecorded(zero.entry);
  CHECK(unrecorded.See(0, b).ok());
  CHECK_FALSE(unrecorded.checked());
}

TEST_CASE("StreamedCrcs checks the stored records a copy of the whole file goes through") {
  Record r = MakeRecord();
  std::vector<std::byte> file(1200, std::byte{0});
  std::copy(r.bytes.begin(), r.bytes.end(), file.begin() + 1000);
  Entry other = r.entry;
  other.name = "arch/data/1";
  other.data_offset = 1100;
  other.size = 50;
  other.crc32 = Crc32(0, std::span<const std::byte>(file).subspan(1100, 50));
  Entry deflated = other;  // left out: checked by inflating
  deflated.method = kMethodDeflated;
  deflated.crc32 = 12345;
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{1200}}) {
    CAPTURE(chunk);
    std::vector<std::byte> bad = file;
    bad[1120] ^= std::byte{4};
    StreamedCrcs good({r.entry, other, deflated}), caught({r.entry, other, deflated});
    Status first;
    for (size_t pos = 0; pos < file.size(); pos += chunk) {
      const size_t n = std::min(chunk, file.size() - pos);
      REQUIRE(good.See(pos, std::span<const std::byte>(file).subspan(pos, n)).ok());
      Status s = caught.See(pos, std::span<const std::byte>(bad).subspan(pos, n));
      if (first.ok() && !s.ok()) first = s;
    }
    CHECK_EQ(first.code(), Code::kCorrupt);
    CHECK_EQ(first.record(), "arch/data/1");
  }
}

TEST_CASE("OpenEntries keeps a stored record open, so reads over several calls are checked") {
  Record r = MakeRecord();
  std::vector<std::byte> file(1200, std::byte{0});
  std::copy(r.bytes.begin(), r.bytes.end(), file.begin() + 1000);
  file[1042] ^= std::byte{2};
  io::MemSource src("f.pt", file);
  OpenEntries open;
  std::vector<std::byte> buf(50);
  Result<EntrySource*> a = open.Open(src, r.entry);
  REQUIRE(a.ok());
  CHECK(ReadExactAt(**a, 0, buf).ok());
  Result<EntrySource*> b = open.Open(src, r.entry);
  REQUIRE(b.ok());
  CHECK_EQ(*a, *b);
  Status s = ReadExactAt(**b, 50, buf);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "arch/data/0");
  // An empty entry where the next one starts (safetensors places an empty
  // tensor so) is another entry.
  Entry empty = r.entry;
  empty.size = 0;
  empty.crc32 = 0;
  Result<EntrySource*> e = open.Open(src, empty);
  REQUIRE(e.ok());
  CHECK_EQ((*e)->size(), 0u);
  CHECK_EQ((*open.Open(src, r.entry))->size(), 100u);
}

}  // namespace
}  // namespace zerofold::zip
