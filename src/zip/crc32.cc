#include "zip/crc32.h"

#include <array>
#include <cstddef>
#include <cstdint>

#include "io/cursor.h"
#include "zip/crc32_internal.h"

namespace zerofold::zip {
namespace internal {
namespace {

constexpr uint32_t kReflectedPolynomial = 0xEDB88320;

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the
// register after byte b followed by k zero bytes, which lets slicing-by-8
// look up eight bytes independently.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables BuildTables() {
  CrcTables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r & 1) ? (r >> 1) ^ kReflectedPolynomial : r >> 1;
    t[0][b] = r;
  }
  for (size_t k = 1; k < t.size(); ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr CrcTables kTables = BuildTables();
static_assert(kTables[0][1] == 0x77073096);  // the published first non-zero entry

}  // namespace

uint32_t Crc32RegisterTable(uint32_t reg, const std::byte* p, size_t n) {
  while (n >= 8) {
    uint32_t lo = io::DecodeU32le(p) ^ reg;
    uint32_t hi = io::DecodeU32le(p + 4);
    reg = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
          kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    reg = (reg >> 8) ^ kTables[0][(reg ^ std::to_integer<uint32_t>(*p)) & 0xff];
    ++p;
    --n;
  }
  return reg;
}

}  // namespace internal

uint32_t Crc32(uint32_t crc, std::span<const std::byte> data) {
  // Folding pays for its setup only past a few blocks.
  constexpr size_t kFoldingMinSize = 256;
  static const bool folding = internal::Crc32FoldingAvailable();
  uint32_t reg = ~crc;
  if (folding && data.size() >= kFoldingMinSize) {
    reg = internal::Crc32RegisterFolding(reg, data.data(), data.size());
  } else {
    reg = internal::Crc32RegisterTable(reg, data.data(), data.size());
  }
  return ~reg;
}

}  // namespace zerofold::zip
