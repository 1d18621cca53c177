#include "ops/merge_convert.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "zip/crc32.h"

namespace zerofold::ops {
namespace {

using torch::DType;

std::vector<std::byte> Le16(const std::vector<uint16_t>& v) {
  std::vector<std::byte> out;
  for (uint16_t x : v) {
    out.push_back(static_cast<std::byte>(x & 0xFF));
    out.push_back(static_cast<std::byte>(x >> 8));
  }
  return out;
}

std::vector<uint32_t> From32(const std::vector<std::byte>& b) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i + 4 <= b.size(); i += 4)
    out.push_back(static_cast<uint32_t>(b[i]) | static_cast<uint32_t>(b[i + 1]) << 8 |
                  static_cast<uint32_t>(b[i + 2]) << 16 | static_cast<uint32_t>(b[i + 3]) << 24);
  return out;
}

std::vector<uint32_t> Convert16(DType from, const std::vector<uint16_t>& bits) {
  std::vector<std::byte> src = Le16(bits);
  std::vector<std::byte> dst(bits.size() * 4);
  Status s = ConvertElements(from, DType::kFloat32, src, dst);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  return From32(dst);
}

// Expected values: torch 1.13's
//   torch.tensor(bits, dtype=torch.int32).to(torch.int16).view(torch.float16).float()
TEST_CASE("float16 -> float32 as torch: exact, subnormals normalized, NaNs quieted") {
  std::vector<uint16_t> in = {0x0000, 0x8000, 0x3C00, 0x0001, 0x03FF, 0x0400, 0x7BFF,
                              0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFD00, 0x3555};
  std::vector<uint32_t> want = {0x00000000, 0x80000000, 0x3f800000, 0x33800000, 0x387fc000, 0x38800000, 0x477fe000,
                                0x7f800000, 0xff800000, 0x7fc00000, 0x7fc02000, 0xffe00000, 0x3eaaa000};
  CHECK_EQ(Convert16(DType::kFloat16, in), want);
}

TEST_CASE("bfloat16 -> float32 as torch: the bits shifted, signaling NaNs kept") {
  std::vector<uint16_t> in = {0x0000, 0x8000, 0x3F80, 0x0001, 0x7F80, 0x7FC0, 0x7F81, 0xFFFF, 0x4049};
  std::vector<uint32_t> want = {0x0, 0x80000000, 0x3f800000, 0x10000, 0x7f800000, 0x7fc00000, 0x7f810000,
                                0xffff0000, 0x40490000};
  CHECK_EQ(Convert16(DType::kBFloat16, in), want);
}

// CRC-32 of torch's float32 bytes for all 65536 bit patterns in order:
//   a = torch.arange(65536, dtype=torch.int32).to(torch.int16)
//   zlib.crc32(a.view(torch.float16).float().numpy().tobytes())   # 0x4e646bca
//   zlib.crc32(a.view(torch.bfloat16).float().numpy().tobytes())  # 0x093b1249
TEST_CASE("every float16 and bfloat16 value converts as torch converts it") {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<std::byte> src = Le16(all);
  std::vector<std::byte> dst(all.size() * 4);
  REQUIRE(ConvertElements(DType::kFloat16, DType::kFloat32, src, dst).ok());
  CHECK_EQ(zip::Crc32(0, dst), 0x4e646bcau);
  REQUIRE(ConvertElements(DType::kBFloat16, DType::kFloat32, src, dst).ok());
  CHECK_EQ(zip::Crc32(0, dst), 0x093b1249u);
}

TEST_CASE("equal dtypes copy; other pairs and sizes are refused") {
  std::vector<std::byte> src = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}, std::byte{6},
                                std::byte{7}, std::byte{8}};
  std::vector<std::byte> dst(8);
  REQUIRE(ConvertElements(DType::kInt64, DType::kInt64, src, dst).ok());
  CHECK(dst == src);
  CHECK(CanConvert(DType::kInt64, DType::kInt64));
  CHECK(CanConvert(DType::kFloat16, DType::kFloat32));
  CHECK_FALSE(CanConvert(DType::kFloat32, DType::kFloat16));
  CHECK_FALSE(CanConvert(DType::kInt64, DType::kFloat32));
  CHECK_EQ(ConvertElements(DType::kInt64, DType::kFloat32, src, dst).code(), Code::kUnsupported);
  std::vector<std::byte> odd(3);
  std::vector<std::byte> four(4);
  CHECK_EQ(ConvertElements(DType::kFloat16, DType::kFloat32, odd, four).code(), Code::kInvalidArgument);
  std::vector<std::byte> two(2);
  CHECK_EQ(ConvertElements(DType::kFloat16, DType::kFloat32, two, dst).code(), Code::kInvalidArgument);
  CHECK_EQ(ConvertElements(DType::kFloat32, DType::kFloat32, src, four).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace zerofold::ops
