#include "zip/crc32.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/cursor.h"
#include "zip/crc32_internal.h"

namespace zerofold::zip {
namespace {

// Values from Python's zlib.crc32.
struct Vector {
  const char* name;
  std::vector<std::byte> data;
  uint32_t crc;
};

std::vector<std::byte> Text(std::string_view s) {
  std::span<const std::byte> b = io::AsBytes(s);
  return {b.begin(), b.end()};
}

// (i*i + 7*i) % 251 for i in [0, n): irregular, so folding errors show.
std::vector<std::byte> Pattern(size_t n) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::byte(static_cast<uint8_t>((i * i + 7 * i) % 251));
  return out;
}

TEST_CASE("CRC-32 matches published and zlib values") {
  const Vector kVectors[] = {
      {"empty", {}, 0x00000000},
      {"a", Text("a"), 0xE8B7BE43},
      {"check string", Text("123456789"), 0xCBF43926},
      {"fox", Text("The quick brown fox jumps over the lazy dog"), 0x414FA339},
      {"1 MiB of zeros", std::vector<std::byte>(1 << 20), 0xA738EA1C},
      {"100003-byte pattern", Pattern(100003), 0xF6E29940},
  };
  for (const Vector& v : kVectors) {
    const std::string case_name = v.name;
    CAPTURE(case_name);
    CHECK_EQ(Crc32(0, v.data), v.crc);
    CHECK_EQ(~internal::Crc32RegisterTable(~0u, v.data.data(), v.data.size()), v.crc);
  }
}

TEST_CASE("CRC-32 continues across every split point") {
  std::vector<std::byte> data = Pattern(1000);
  const uint32_t whole = Crc32(0, data);
  std::span<const std::byte> all(data);
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    CAPTURE(cut);
    REQUIRE_EQ(Crc32(Crc32(0, all.first(cut)), all.subspan(cut)), whole);
  }
}

TEST_CASE("the folding kernel agrees with the table kernel at every length and alignment") {
  if (!internal::Crc32FoldingAvailable()) {
    MESSAGE("no carry-less multiply on this CPU; folding kernel not exercised");
    return;
  }
  std::vector<std::byte> data = Pattern(4096 + 64);
  for (size_t start = 0; start < 17; ++start) {
    for (size_t len = 0; len + start <= 1200; len += (len < 300 ? 1 : 37)) {
      CAPTURE(start);
      CAPTURE(len);
      const std::byte* p = data.data() + start;
      REQUIRE_EQ(internal::Crc32RegisterFolding(0x12345678, p, len),
                 internal::Crc32RegisterTable(0x12345678, p, len));
    }
  }
  CHECK_EQ(~internal::Crc32RegisterFolding(~0u, data.data(), 4096),
           ~internal::Crc32RegisterTable(~0u, data.data(), 4096));
}

}  // namespace
}  // namespace zerofold::zip
