// Archives torch (miniz) and zerofold could read differently are refused as
// ambiguous when opened (zip/central_directory.h, "Parity with torch"); the end record case is in
// archive_test.cc ("end record comments ...").
#include "zip/central_directory.h"
#include "zip/crc32.h"

#include <doctest/doctest.h>

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

}  // namespace
}  // namespace zerofold::zip
