#include "io/zstd_stream.h"

#include <doctest/doctest.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/mem.h"

namespace zerofold::io {
namespace {

ZstdOptions Options(int level, int workers = 0, int window_log_max = 27) {
  ZstdOptions o;
  o.level = level;
  o.workers = workers;
  o.window_log_max = window_log_max;
  return o;
}

// Deterministic bytes that compress somewhat: runs of a counter mixed with
// a linear congruential sequence.
std::vector<std::byte> Sample(size_t n, uint32_t seed = 1) {
  std::vector<std::byte> out(n);
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = std::byte((i / 7) % 3 == 0 ? static_cast<uint8_t>(i / 64) : static_cast<uint8_t>(x >> 24));
  }
  return out;
}

std::vector<std::byte> Compress(std::span<const std::byte> data, const ZstdOptions& options = {},
                                size_t piece = 1000) {
  MemSink mem("out.zst");
  std::unique_ptr<ZstdSink> z = ZstdSink::Open(&mem, options).value();
  for (size_t at = 0; at < data.size(); at += piece)
    REQUIRE(z->Append(data.subspan(at, std::min(piece, data.size() - at))).ok());
  REQUIRE(z->Finish().ok());
  CHECK_EQ(z->position(), data.size());
  return mem.bytes();
}

// Reads `compressed` through a ZstdSource fed `chunk` bytes at a time.
// Returns what came out before the end or the first error, and the error.
struct Decompressed {
  std::vector<std::byte> bytes;
  Status status;
};
Decompressed Decompress(std::vector<std::byte> compressed, size_t chunk, size_t piece = 333,
                        const ZstdOptions& options = {}) {
  auto inner = std::make_unique<MemStreamSource>("in.zst", std::move(compressed), chunk);
  std::unique_ptr<ZstdSource> z = ZstdSource::Open(std::move(inner), options).value();
  Decompressed out;
  std::vector<std::byte> buf(piece);
  while (true) {
    Result<size_t> got = z->Read(buf);
    if (!got.ok()) {
      out.status = got.status();
      break;
    }
    if (*got == 0) break;
    out.bytes.insert(out.bytes.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*got));
    CHECK_EQ(z->position(), out.bytes.size());
  }
  return out;
}

TEST_CASE("zstd sink and source round-trip any size, any chunking") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{200000}, size_t{3} << 20}) {
    CAPTURE(n);
    std::vector<std::byte> data = Sample(n);
    std::vector<std::byte> z = Compress(data);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{1} << 20}) {
      if (chunk == 1 && n > 200000) continue;  // a byte at a time is slow, and covered below
      CAPTURE(chunk);
      Decompressed d = Decompress(z, chunk);
      REQUIRE_MESSAGE(d.status.ok(), d.status.ToString());
      CHECK(d.bytes == data);
    }
  }
}

TEST_CASE("the zstd frame has a checksum and no content size") {
  std::vector<std::byte> data = Sample(5000);
  std::vector<std::byte> z = Compress(data);
  CHECK_EQ(ZSTD_getFrameContentSize(z.data(), z.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  // RFC 8878 3.1.1.1.1: the Frame_Header_Descriptor after the magic number.
  REQUIRE_GT(z.size(), 5u);
  const auto descriptor = std::to_integer<unsigned>(z[4]);
  CHECK_EQ(descriptor >> 6, 0u);        // Frame_Content_Size_flag: no size field...
  CHECK_EQ((descriptor >> 5) & 1, 0u);  // ...and not Single_Segment, which would imply one
  CHECK_EQ((descriptor >> 2) & 1, 1u);  // Content_Checksum_flag
  // libzstd's one-shot decompressor agrees.
  std::vector<std::byte> back(data.size());
  CHECK_EQ(ZSTD_decompress(back.data(), back.size(), z.data(), z.size()), data.size());
  CHECK(back == data);
}

TEST_CASE("compression level and workers change the frame, not the content") {
  std::vector<std::byte> data = Sample(1 << 20);
  std::vector<std::byte> fast = Compress(data, Options(1));
  std::vector<std::byte> small = Compress(data, Options(19));
  std::vector<std::byte> threaded = Compress(data, Options(3, 2));
  CHECK_LT(small.size(), fast.size());
  for (const auto* z : {&fast, &small, &threaded}) {
    Decompressed d = Decompress(*z, 1 << 16);
    REQUIRE(d.status.ok());
    CHECK(d.bytes == data);
  }
  // Deterministic: the same bytes for the same options.
  CHECK(Compress(data, Options(1)) == fast);

  MemSink mem;
  for (int bad : {0, 23, -5}) {
    CAPTURE(bad);
    CHECK_EQ(ZstdSink::Open(&mem, Options(bad)).status().code(), Code::kInvalidArgument);
  }
  CHECK_EQ(ZstdSink::Open(&mem, Options(3, -1)).status().code(), Code::kInvalidArgument);
}

TEST_CASE("concatenated and skippable frames read as one stream") {
  std::vector<std::byte> a = Sample(70000, 1), b = Sample(12345, 2);
  std::vector<std::byte> z = Compress(a);
  // RFC 8878 3.1.2: skippable frame, magic 0x184D2A5?, 4-byte size, data.
  const unsigned char skippable[] = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  for (unsigned char c : skippable) z.push_back(std::byte(c));
  std::vector<std::byte> zb = Compress(b);
  z.insert(z.end(), zb.begin(), zb.end());
  Decompressed d = Decompress(z, 4096);
  REQUIRE_MESSAGE(d.status.ok(), d.status.ToString());
  std::vector<std::byte> want = a;
  want.insert(want.end(), b.begin(), b.end());
  CHECK(d.bytes == want);
}

TEST_CASE("every strict prefix of a zstd stream is corrupt at the decompressed offset reached") {
  std::vector<std::byte> data = Sample(20000);
  std::vector<std::byte> z = Compress(data);
  for (size_t cut = 0; cut < z.size(); ++cut) {
    CAPTURE(cut);
    Decompressed d = Decompress(std::vector<std::byte>(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(cut)), 64);
    REQUIRE_FALSE(d.status.ok());
    CHECK_EQ(d.status.code(), Code::kCorrupt);
    // What came out is a prefix of the data, and the error names its end.
    REQUIRE_LE(d.bytes.size(), data.size());
    CHECK(std::equal(d.bytes.begin(), d.bytes.end(), data.begin()));
    CHECK_EQ(d.status.offset(), d.bytes.size());
    CHECK_EQ(d.status.path(), "in.zst");
  }
}

TEST_CASE("zstd source messages say the offset is in the decompressed stream") {
  Decompressed empty = Decompress({}, 64);
  CHECK_EQ(empty.status.code(), Code::kCorrupt);
  CHECK_EQ(empty.status.offset(), 0u);
  CHECK_EQ(empty.status.message(),
           "truncated: the stream holds no zstd frame, in .zst input, offset 0 of the decompressed stream "
           "(compressed offset 0)");

  std::vector<std::byte> data = Sample(100000);
  std::vector<std::byte> z = Compress(data);
  z.resize(z.size() - 1);  // the last byte of the checksum
  Decompressed cut = Decompress(z, 1 << 20, 1 << 20);
  CHECK_EQ(cut.status.code(), Code::kCorrupt);
  CHECK_EQ(cut.status.offset(), cut.bytes.size());
  CHECK_EQ(cut.status.message(), "truncated: the stream ends inside a zstd frame, in .zst input, offset " +
                                     std::to_string(cut.bytes.size()) +
                                     " of the decompressed stream (compressed offset " + std::to_string(z.size()) +
                                     ")");

  std::vector<std::byte> not_zstd = Sample(100);
  Decompressed garbage = Decompress(not_zstd, 64);
  CHECK_EQ(garbage.status.code(), Code::kCorrupt);
  CHECK_EQ(garbage.status.offset(), 0u);
  CHECK_EQ(garbage.status.message(), "zstd: Unknown frame descriptor, in .zst input, offset 0 of the decompressed "
                                     "stream (compressed offset 0)");
}

TEST_CASE("a damaged zstd stream is corrupt, never silently different") {
  std::vector<std::byte> data = Sample(50000);
  std::vector<std::byte> z = Compress(data);
  size_t detected = 0;
  for (size_t at = 0; at < z.size(); at += 97) {
    CAPTURE(at);
    std::vector<std::byte> bad = z;
    bad[at] ^= std::byte{0x20};
    Decompressed d = Decompress(bad, 4096);
    if (d.status.ok()) {
      // A flip in a field zstd ignores would decode to the same bytes; the
      // checksum makes anything else an error.
      CHECK(d.bytes == data);
    } else {
      ++detected;
      CHECK_EQ(d.status.code(), Code::kCorrupt);
      CHECK_NE(d.status.offset(), kNoOffset);
    }
  }
  CHECK_GT(detected, 0u);
}

TEST_CASE("a frame that needs a larger window than allowed is a limit") {
  // 2^28-byte window, declared in the frame header (content size unknown).
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  REQUIRE(cctx != nullptr);
  REQUIRE_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 28)));
  std::vector<std::byte> data = Sample(1000);
  std::vector<std::byte> z(ZSTD_compressBound(data.size()) + 64);
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  ZSTD_outBuffer out{z.data(), z.size(), 0};
  // Data first, the end apart: zstd then cannot know the size and keeps
  // the window it was given.
  REQUIRE_FALSE(ZSTD_isError(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_continue)));
  REQUIRE_EQ(in.pos, in.size);
  ZSTD_inBuffer none{nullptr, 0, 0};
  REQUIRE_EQ(ZSTD_compressStream2(cctx, &out, &none, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(cctx);
  z.resize(out.pos);

  Decompressed refused = Decompress(z, 4096);
  CHECK_EQ(refused.status.code(), Code::kLimit);
  CHECK_EQ(refused.status.message(),
           "a zstd frame needs a window larger than 2^27 bytes (--zstd-window-log-max), in .zst input, offset 0 "
           "of the decompressed stream (compressed offset 0)");
  Decompressed allowed = Decompress(z, 4096, 333, Options(3, 0, 28));
  REQUIRE(allowed.status.ok());
  CHECK(allowed.bytes == data);
}

TEST_CASE("names choose streams") {
  CHECK(IsZstdName("a.pt.zst"));
  CHECK(IsZstdName("dir/.x.zst"));
  CHECK_FALSE(IsZstdName(".zst"));
  CHECK_FALSE(IsZstdName("a.zstd"));
  CHECK_FALSE(IsZstdName("-"));
  CHECK(IsStreamName("-"));
  CHECK(IsStreamName("b.zst"));
  CHECK_FALSE(IsStreamName("b.pt"));
  CHECK_FALSE(IsStreamName("--"));
}

TEST_CASE("errors from readers above a zstd source get the decompressed-offset note") {
  std::vector<std::byte> z = Compress(Sample(10));
  std::unique_ptr<ZstdSource> src =
      ZstdSource::Open(std::make_unique<MemStreamSource>("m.pt.zst", std::move(z))).value();
  Status s = Status::Corrupt("BINUNICODE8 declares 99 bytes, 3 left");
  s.WithOffset(1234).WithRecord("archive/data.pkl");
  Status noted = NoteDecompressedOffset(s, *src);
  CHECK_EQ(noted.code(), Code::kCorrupt);
  CHECK_EQ(noted.offset(), 1234u);
  CHECK_EQ(noted.record(), "archive/data.pkl");
  CHECK_EQ(noted.message(),
           "BINUNICODE8 declares 99 bytes, 3 left; in .zst input, offset 1234 of the decompressed stream");
  // Once is enough.
  CHECK_EQ(NoteDecompressedOffset(noted, *src).message(), noted.message());
  // Another file's error, an error without offset, a plain source: unchanged.
  Status other = Status::IOError("write: no space");
  other.WithPath("out.pt").WithOffset(5);
  CHECK_EQ(NoteDecompressedOffset(other, *src).message(), "write: no space");
  Status no_offset = Status::Unsafe("posix.system");
  CHECK_EQ(NoteDecompressedOffset(no_offset, *src).message(), "posix.system");
  MemStreamSource plain("m.pt", {});
  CHECK_EQ(NoteDecompressedOffset(s, plain).message(), s.message());
}

}  // namespace
}  // namespace zerofold::io
