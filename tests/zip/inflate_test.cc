#include "zip/inflate.h"

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_util.h"
#include "zip/crc32.h"

namespace zerofold::zip {
namespace {

using testing::ReadFileBytes;
using testing::SourceRoot;

// Hands out `bytes` in spans of at most `chunk` bytes.
class SpanInput final : public InflateInput {
 public:
  SpanInput(std::span<const std::byte> bytes, size_t chunk) : bytes_(bytes), chunk_(chunk) {}
  Result<std::span<const std::byte>> Next() override {
    const size_t n = std::min(chunk_, bytes_.size() - at_);
    std::span<const std::byte> out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t chunk_;
  size_t at_ = 0;
};

struct Inflated {
  Status status;
  std::vector<std::byte> bytes;
  uint64_t input_bytes = 0;
  std::vector<std::byte> leftover;
};

Inflated InflateAll(std::span<const std::byte> stream, InflateBound bound, size_t chunk = 1 << 16,
                    uint64_t base = 1000) {
  SpanInput in(stream, chunk);
  Inflater inf(&in, base, bound);
  Inflated r;
  std::vector<std::byte> buf(4099);
  while (true) {
    Result<size_t> got = inf.Read(buf);
    if (!got.ok()) {
      r.status = got.status();
      return r;
    }
    if (*got == 0) break;
    r.bytes.insert(r.bytes.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*got));
  }
  CHECK(inf.finished());
  r.input_bytes = inf.input_bytes();
  r.leftover = inf.Leftover();
  return r;
}

Inflated InflateDeclared(std::span<const std::byte> stream, uint64_t size, size_t chunk = 1 << 16) {
  return InflateAll(stream, InflateBound{size, true}, chunk);
}

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

// What fixtures/zip/deflate/make_deflate.py compresses.
std::vector<std::byte> SampleBytes(size_t text_bytes, size_t random_bytes) {
  static const char* kWords[] = {"tensor", "storage", "zero", "shard", "flat", "buffer", "param",
                                 "grad",   "optimizer", "state", "the", "a", "of", "and"};
  uint32_t state = 12345;
  auto next = [&] {
    state = static_cast<uint32_t>((uint64_t{state} * 1103515245 + 12345) & 0x7FFFFFFF);
    return state >> 16;
  };
  std::string out;
  auto text = [&](size_t n) {
    const size_t end = out.size() + n;
    while (out.size() < end) {
      out += kWords[next() % 14];
      out += next() % 10 == 0 ? '\n' : ' ';
    }
    out.resize(end);
  };
  text(text_bytes);
  for (size_t i = 0; i < random_bytes; ++i) out += static_cast<char>(next() & 0xFF);
  text(text_bytes);
  return Bytes(out);
}

// A deflate bit writer: fields LSB first, Huffman codes MSB first.
class BitWriter {
 public:
  void Bits(uint32_t value, int n) {
    for (int i = 0; i < n; ++i) Bit((value >> i) & 1);
  }
  void Code(uint32_t code, int n) {
    for (int i = n - 1; i >= 0; --i) Bit((code >> i) & 1);
  }
  void AlignByte() {
    while (nbits_ != 0) Bit(0);
  }
  void Byte(uint8_t b) { Bits(b, 8); }
  // RFC 1951 3.2.6: the fixed literal/length code.
  void FixedSymbol(int sym) {
    if (sym < 144) Code(0x30 + sym, 8);
    else if (sym < 256) Code(0x190 + sym - 144, 9);
    else if (sym < 280) Code(sym - 256, 7);
    else Code(0xC0 + sym - 280, 8);
  }
  void FixedLiteral(uint8_t b) { FixedSymbol(b); }
  void FixedMatch(int length, int distance) {
    static const int kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                     31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const int kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const int kDistBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                      193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    int l = 28;
    while (kLenBase[l] > length) --l;
    FixedSymbol(257 + l);
    Bits(static_cast<uint32_t>(length - kLenBase[l]), kLenExtra[l]);
    int d = 29;
    while (kDistBase[d] > distance) --d;
    Code(static_cast<uint32_t>(d), 5);
    Bits(static_cast<uint32_t>(distance - kDistBase[d]), kDistExtra[d]);
  }
  void FixedHeader(bool final) {
    Bits(final ? 1 : 0, 1);
    Bits(1, 2);
  }
  void Stored(bool final, std::span<const std::byte> data) {
    Bits(final ? 1 : 0, 1);
    Bits(0, 2);
    AlignByte();
    const uint16_t len = static_cast<uint16_t>(data.size());
    Bits(len, 16);
    Bits(static_cast<uint16_t>(~len), 16);
    for (std::byte b : data) Byte(static_cast<uint8_t>(b));
  }
  std::vector<std::byte> Finish() {
    AlignByte();
    return out_;
  }

 private:
  void Bit(uint32_t b) {
    if (nbits_ == 0) out_.push_back(std::byte{0});
    out_.back() |= static_cast<std::byte>(b << nbits_);
    nbits_ = (nbits_ + 1) % 8;
  }
  std::vector<std::byte> out_;
  int nbits_ = 0;
};

TEST_CASE("inflate: a stored block, and several") {
  BitWriter w;
  w.Stored(false, Bytes("hello, "));
  w.Stored(false, Bytes(""));
  w.Stored(true, Bytes("world"));
  const std::vector<std::byte> stream = w.Finish();
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{1 << 16}}) {
    CAPTURE(chunk);
    Inflated r = InflateDeclared(stream, 12, chunk);
    REQUIRE(r.status.ok());
    CHECK(r.bytes == Bytes("hello, world"));
    CHECK_EQ(r.input_bytes, stream.size());
    CHECK(r.leftover.empty());
  }
}

TEST_CASE("inflate: a stored block whose LEN and NLEN disagree") {
  BitWriter w;
  w.Bits(1, 1);
  w.Bits(0, 2);
  w.AlignByte();
  w.Bits(5, 16);
  w.Bits(0xFFFA ^ 0x0100, 16);  // not ~5
  for (char c : std::string("hello")) w.Byte(static_cast<uint8_t>(c));
  Inflated r = InflateDeclared(w.Finish(), 5);
  CHECK_EQ(r.status.code(), Code::kCorrupt);
  CHECK_EQ(r.status.offset(), 1001);  // the LEN field, after the 1-byte header
  CHECK_EQ(r.status.message(), "stored block LEN 0x0005 and NLEN 0xfefa are not complements");
}

TEST_CASE("inflate: fixed blocks with back-references across blocks") {
  BitWriter w;
  w.FixedHeader(false);
  for (char c : std::string("abcde")) w.FixedLiteral(static_cast<uint8_t>(c));
  w.FixedSymbol(256);
  w.Stored(false, Bytes("XY"));
  w.FixedHeader(true);
  w.FixedMatch(5, 7);   // "abcde", from the first block
  w.FixedMatch(10, 2);  // overlapping: "dededededede"[..10]
  w.FixedSymbol(256);
  const std::vector<std::byte> stream = w.Finish();
  Inflated r = InflateDeclared(stream, 22);
  REQUIRE(r.status.ok());
  CHECK(r.bytes == Bytes("abcdeXYabcdededededede"));
}

TEST_CASE("inflate: distance 32768 and length 258") {
  std::vector<std::byte> first(32768);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<std::byte>((i * 7 + i / 251) & 0xFF);
  BitWriter w;
  w.Stored(false, std::span(first).first(20000));
  w.Stored(false, std::span(first).subspan(20000));
  w.FixedHeader(true);
  w.FixedMatch(258, 32768);
  w.FixedMatch(258, 32768);
  w.FixedSymbol(256);
  const std::vector<std::byte> stream = w.Finish();
  std::vector<std::byte> expected = first;
  for (size_t i = 0; i < 516; ++i) expected.push_back(expected[expected.size() - 32768]);
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{1 << 16}}) {
    CAPTURE(chunk);
    Inflated r = InflateDeclared(stream, expected.size(), chunk);
    REQUIRE(r.status.ok());
    CHECK(r.bytes == expected);
  }
}

TEST_CASE("inflate: a long run of length-258 matches slides the window") {
  BitWriter w;
  w.FixedHeader(true);
  w.FixedLiteral('z');
  const size_t matches = 2000;  // 516 KB: several slides of the window
  for (size_t i = 0; i < matches; ++i) w.FixedMatch(258, 1);
  w.FixedSymbol(256);
  Inflated r = InflateDeclared(w.Finish(), 1 + matches * 258);
  REQUIRE(r.status.ok());
  CHECK(r.bytes == std::vector<std::byte>(1 + matches * 258, std::byte{'z'}));
}

TEST_CASE("inflate: invalid streams") {
  struct Bad {
    const char* name;
    std::vector<std::byte> stream;
    const char* message;
  };
  std::vector<Bad> cases;
  {
    BitWriter w;
    w.FixedHeader(true);
    w.FixedLiteral('a');
    w.FixedMatch(3, 2);
    cases.push_back({"distance too far back", w.Finish(), "distance 2 reaches before the first output byte (1 bytes decoded)"});
  }
  {
    BitWriter w;
    w.FixedHeader(true);
    w.FixedMatch(3, 1);
    cases.push_back({"distance with no output", w.Finish(), "distance 1 reaches before the first output byte (0 bytes decoded)"});
  }
  {
    BitWriter w;
    w.FixedHeader(true);
    w.FixedLiteral('a');
    w.FixedSymbol(286);
    cases.push_back({"literal/length symbol 286", w.Finish(), "invalid literal/length symbol 286"});
  }
  {
    BitWriter w;
    w.FixedHeader(true);
    w.FixedLiteral('a');
    w.FixedSymbol(257);
    w.Code(30, 5);
    cases.push_back({"distance symbol 30", w.Finish(), "invalid distance symbol 30"});
  }
  {
    BitWriter w;
    w.Bits(1, 1);
    w.Bits(3, 2);
    cases.push_back({"block type 3", w.Finish(), "deflate block type 3, which RFC 1951 reserves"});
  }
  {
    BitWriter w;  // dynamic: every code-length code has length 1
    w.Bits(1, 1);
    w.Bits(2, 2);
    w.Bits(0, 5);
    w.Bits(0, 5);
    w.Bits(15, 4);
    for (int i = 0; i < 19; ++i) w.Bits(1, 3);
    cases.push_back({"over-subscribed code-length code", w.Finish(),
                     "over-subscribed Huffman code lengths (19 codes of length 1 do not fit)"});
  }
  {
    BitWriter w;  // dynamic: one code-length code of length 1: incomplete
    w.Bits(1, 1);
    w.Bits(2, 2);
    w.Bits(0, 5);
    w.Bits(0, 5);
    w.Bits(0, 4);
    w.Bits(0, 3);  // 16
    w.Bits(0, 3);  // 17
    w.Bits(1, 3);  // 18
    w.Bits(0, 3);  // 0
    cases.push_back({"incomplete code-length code", w.Finish(),
                     "incomplete code-length Huffman code (1 codes leave part of the code space unused)"});
  }
  {
    BitWriter w;  // dynamic: HLIT 287
    w.Bits(1, 1);
    w.Bits(2, 2);
    w.Bits(30, 5);
    w.Bits(0, 5);
    w.Bits(0, 4);
    cases.push_back({"too many literal codes", w.Finish(),
                     "dynamic block declares 287 literal/length and 1 distance codes, more than 286 and 30"});
  }
  {
    // dynamic: code-length code: symbols 1 and 16 and 18 of length 2, 0 of 2
    // (complete); first length code is 16 (repeat with nothing before).
    BitWriter w;
    w.Bits(1, 1);
    w.Bits(2, 2);
    w.Bits(0, 5);
    w.Bits(0, 5);
    w.Bits(14, 4);  // 18 code-length lengths: through symbol 1 in kCodeLengthOrder
    const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    for (int i = 0; i < 18; ++i) {
      const int sym = order[i];
      w.Bits(sym == 16 || sym == 18 || sym == 0 || sym == 1 ? 2 : 0, 3);
    }
    // Canonical codes of length 2 in symbol order: 0 -> 00, 1 -> 01, 16 -> 10, 18 -> 11.
    w.Code(2, 2);
    w.Bits(0, 2);
    cases.push_back({"repeat without a previous length", w.Finish(), "code-length repeat (16) with no previous length"});
  }
  for (const Bad& c : cases) {
    CAPTURE(c.name);
    Inflated r = InflateDeclared(c.stream, 100);
    CHECK_EQ(r.status.code(), Code::kCorrupt);
    CHECK_EQ(r.status.message(), c.message);
    CHECK(r.status.offset() >= 1000);
    CHECK(r.status.offset() <= 1000 + c.stream.size());
  }
}

TEST_CASE("inflate: Huffman tables refuse over-subscribed and incomplete codes") {
  HuffmanTable t;
  const uint8_t over[] = {1, 1, 1};
  CHECK_EQ(BuildHuffmanTable(over, HuffmanKind::kLiteralLength, &t).code(), Code::kCorrupt);
  const uint8_t incomplete[] = {1, 2, 0, 0};
  CHECK_EQ(BuildHuffmanTable(incomplete, HuffmanKind::kDistance, &t).code(), Code::kCorrupt);
  CHECK_EQ(BuildHuffmanTable(incomplete, HuffmanKind::kLiteralLength, &t).code(), Code::kCorrupt);
  const uint8_t single[] = {0, 1, 0};  // one code of length 1: allowed (RFC 1951 3.2.7)
  CHECK(BuildHuffmanTable(single, HuffmanKind::kDistance, &t).ok());
  CHECK(BuildHuffmanTable(single, HuffmanKind::kLiteralLength, &t).ok());
  CHECK_EQ(BuildHuffmanTable(single, HuffmanKind::kCodeLengths, &t).code(), Code::kCorrupt);
  const uint8_t none[] = {0, 0, 0};  // no distance codes: a block of literals only
  CHECK(BuildHuffmanTable(none, HuffmanKind::kDistance, &t).ok());
  // Codes longer than the primary table are walked: 2^k - 1 lengths 1..15.
  std::vector<uint8_t> deep;
  for (uint8_t l = 1; l <= 15; ++l) deep.push_back(l);
  deep.push_back(15);
  CHECK(BuildHuffmanTable(deep, HuffmanKind::kLiteralLength, &t).ok());
}

TEST_CASE("inflate: zlib's dynamic blocks at levels 1, 6 and 9") {
  const std::vector<std::byte> expected = SampleBytes(60000, 40000);
  REQUIRE_EQ(Crc32(0, expected), 0x1191ab43u);
  for (const char* level : {"1", "6", "9"}) {
    CAPTURE(level);
    const std::vector<std::byte> stream =
        ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/sample_level" + level + ".deflate");
    REQUIRE(!stream.empty());
    for (size_t chunk : {size_t{7}, size_t{4096}, size_t{1 << 20}}) {
      CAPTURE(chunk);
      Inflated r = InflateDeclared(stream, expected.size(), chunk);
      REQUIRE(r.status.ok());
      CHECK(r.bytes == expected);
      CHECK_EQ(r.input_bytes, stream.size());
    }
  }
}

TEST_CASE("inflate: bytes after the stream are left over, in order") {
  std::vector<std::byte> stream = ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/small_level6.deflate");
  REQUIRE(!stream.empty());
  const size_t n = stream.size();
  for (char c : std::string("PK\x07\x08tail")) stream.push_back(static_cast<std::byte>(c));
  const std::vector<std::byte> tail(stream.begin() + static_cast<std::ptrdiff_t>(n), stream.end());
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1 << 16}}) {
    CAPTURE(chunk);
    SpanInput in(stream, chunk);
    Inflater inf(&in, 0, InflateBound{3300, true});
    std::vector<std::byte> out(4000);
    size_t total = 0;
    while (true) {
      Result<size_t> got = inf.Read(std::span(out).subspan(total));
      REQUIRE(got.ok());
      if (*got == 0) break;
      total += *got;
    }
    CHECK_EQ(total, 3300u);
    CHECK_EQ(inf.input_bytes(), n);
    // What the Inflater took past the stream, then what it never asked for.
    std::vector<std::byte> rest = inf.Leftover();
    while (true) {
      std::span<const std::byte> more = in.Next().value();
      if (more.empty()) break;
      rest.insert(rest.end(), more.begin(), more.end());
    }
    CHECK(rest == tail);
  }
}

TEST_CASE("inflate: the declared size bounds the output") {
  const std::vector<std::byte> stream = ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/sample_level6.deflate");
  REQUIRE(!stream.empty());
  Inflated more = InflateDeclared(stream, 100000);
  CHECK_EQ(more.status.code(), Code::kCorrupt);
  CHECK_EQ(more.status.message(), "deflate stream produces more than the declared 100000 bytes");
  Inflated fewer = InflateDeclared(stream, 160001);
  CHECK_EQ(fewer.status.code(), Code::kCorrupt);
  CHECK_EQ(fewer.status.message(), "deflate stream ends after 160000 bytes, the entry declares 160001");
  CHECK_EQ(fewer.status.offset(), 1000 + stream.size());
  Inflated limit = InflateAll(stream, InflateBound{159999, false});
  CHECK_EQ(limit.status.code(), Code::kLimit);
  Inflated within = InflateAll(stream, InflateBound{160000, false});
  CHECK(within.status.ok());
  CHECK_EQ(within.bytes.size(), 160000u);
  Inflated zero = InflateDeclared(stream, 0);
  CHECK_EQ(zero.status.code(), Code::kCorrupt);

  // A bomb: 1 MiB of zeros in a few hundred bytes, declared as 1000 bytes.
  BitWriter w;
  w.FixedHeader(true);
  w.FixedLiteral(0);
  for (int i = 0; i < 4100; ++i) w.FixedMatch(258, 1);
  w.FixedSymbol(256);
  Inflated bomb = InflateDeclared(w.Finish(), 1000);
  CHECK_EQ(bomb.status.code(), Code::kCorrupt);
  CHECK_EQ(bomb.status.message(), "deflate stream produces more than the declared 1000 bytes");
}

TEST_CASE("inflate: every truncation fails, every corruption fails or decodes the bytes") {
  const std::vector<std::byte> stream = ReadFileBytes(SourceRoot() + "/fixtures/zip/deflate/small_level6.deflate");
  const std::vector<std::byte> expected = SampleBytes(1500, 300);
  REQUIRE(!stream.empty());
  REQUIRE(InflateDeclared(stream, expected.size()).bytes == expected);
  const uint32_t crc = Crc32(0, expected);
  for (size_t n = 0; n < stream.size(); ++n) {
    CAPTURE(n);
    // An exact-sized copy, so a read past the prefix would be a heap overflow under ASan.
    std::vector<std::byte> prefix(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(n));
    Inflated r = InflateDeclared(prefix, expected.size(), n % 2 == 0 ? 1 << 16 : 3);
    CHECK_EQ(r.status.code(), Code::kCorrupt);
    Inflated unbounded = InflateAll(prefix, InflateBound{1 << 20, false});
    CHECK_EQ(unbounded.status.code(), Code::kCorrupt);
  }
  size_t failed = 0;
  for (size_t at = 0; at < stream.size(); ++at) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0xFF}}) {
      CAPTURE(at);
      CAPTURE(flip);
      std::vector<std::byte> bad = stream;
      bad[at] ^= static_cast<std::byte>(flip);
      Inflated r = InflateDeclared(bad, expected.size());
      // What the zip layer does: a stream that decodes must match the CRC-32.
      if (r.status.ok() && Crc32(0, r.bytes) == crc) {
        CHECK(r.bytes == expected);
      } else {
        ++failed;
      }
    }
  }
  CHECK(failed > stream.size());
}

}  // namespace
}  // namespace zerofold::zip
