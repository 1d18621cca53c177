#include "ops/merge_convert.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace zerofold::ops {

namespace {

using torch::DType;

// IEEE 754 binary16 and binary32 fields.
constexpr uint32_t kHalfExpMask = 0x7C00;
constexpr uint32_t kHalfMantMask = 0x03FF;
constexpr uint32_t kHalfMantBits = 10;
constexpr uint32_t kFloatMantBits = 23;
constexpr uint32_t kExpBiasDelta = 127 - 15;
constexpr uint32_t kFloatExpAllOnes = 0xFF;
constexpr uint32_t kFloatQuietBit = 0x00400000;

uint32_t HalfToFloatBits(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h & kHalfExpMask) >> kHalfMantBits;
  uint32_t mant = h & kHalfMantMask;
  if (exp == (kHalfExpMask >> kHalfMantBits)) {  // inf or NaN
    uint32_t m = mant << (kFloatMantBits - kHalfMantBits);
    if (mant != 0) m |= kFloatQuietBit;
    return sign | (kFloatExpAllOnes << kFloatMantBits) | m;
  }
  if (exp == 0) {
    if (mant == 0) return sign;
    // Subnormal: normalize. The value is mant x 2^-24.
    uint32_t e = kExpBiasDelta + 1;
    while ((mant & (1u << kHalfMantBits)) == 0) {
      mant <<= 1;
      --e;
    }
    mant &= kHalfMantMask;
    return sign | (e << kFloatMantBits) | (mant << (kFloatMantBits - kHalfMantBits));
  }
  return sign | ((exp + kExpBiasDelta) << kFloatMantBits) | (mant << (kFloatMantBits - kHalfMantBits));
}

uint16_t Load16(const std::byte* p) {
  return static_cast<uint16_t>(static_cast<uint16_t>(p[0]) | (static_cast<uint16_t>(p[1]) << 8));
}

void Store32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

}  // namespace

bool CanConvert(DType from, DType to) {
  if (from == to) return true;
  return to == DType::kFloat32 && (from == DType::kFloat16 || from == DType::kBFloat16);
}

Status ConvertElements(DType from, DType to, std::span<const std::byte> src, std::span<std::byte> dst) {
  if (!CanConvert(from, to))
    return Status::Unsupported("no conversion from " + std::string(torch::Info(from).name) + " to " +
                               std::string(torch::Info(to).name));
  const size_t in = torch::Info(from).itemsize, out = torch::Info(to).itemsize;
  if (src.size() % in != 0 || dst.size() / out != src.size() / in || dst.size() % out != 0)
    return Status::InvalidArgument(std::to_string(src.size()) + " source bytes do not convert into " +
                                   std::to_string(dst.size()) + " bytes");
  if (from == to) {
    if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
    return Status::OK();
  }
  const size_t n = src.size() / in;
  if (from == DType::kFloat16) {
    for (size_t i = 0; i < n; ++i) Store32(dst.data() + 4 * i, HalfToFloatBits(Load16(src.data() + 2 * i)));
  } else {
    for (size_t i = 0; i < n; ++i) Store32(dst.data() + 4 * i, static_cast<uint32_t>(Load16(src.data() + 2 * i)) << 16);
  }
  return Status::OK();
}

}  // namespace zerofold::ops
