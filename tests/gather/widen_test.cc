// The conversions merge relies on for frozen params and floating buffers
// stored in 16 bits: every float16 and bfloat16 value widens to float32 as
// torch 1.13's .float() widens it (torch/cast.h does the work).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "gather/assemble.h"
#include "torch/cast.h"
#include "zip/crc32.h"

namespace zerofold::gather {
namespace {

using torch::DType;

// CRC-32 of torch's float32 bytes for all 65536 bit patterns in order:
//   a = torch.arange(65536, dtype=torch.int32).to(torch.int16)
//   zlib.crc32(a.view(torch.float16).float().numpy().tobytes())   # 0x4e646bca
//   zlib.crc32(a.view(torch.bfloat16).float().numpy().tobytes())  # 0x093b1249
TEST_CASE("every float16 and bfloat16 value widens to float32 as torch widens it") {
  std::vector<std::byte> src(65536 * 2);
  for (uint32_t i = 0; i < 65536; ++i) {
    src[2 * i] = static_cast<std::byte>(i & 0xFF);
    src[2 * i + 1] = static_cast<std::byte>(i >> 8);
  }
  std::vector<std::byte> dst(65536 * 4);
  torch::NanRule rule;
  REQUIRE(torch::CastElements(DType::kFloat16, DType::kFloat32, src, dst, rule).ok());
  CHECK_EQ(zip::Crc32(0, dst), 0x4e646bcau);
  REQUIRE(torch::CastElements(DType::kBFloat16, DType::kFloat32, src, dst, rule).ok());
  CHECK_EQ(zip::Crc32(0, dst), 0x093b1249u);
}

TEST_CASE("CanConvert: equal dtypes, and between the four floating dtypes torch/cast.h rounds") {
  CHECK(CanConvert(DType::kInt64, DType::kInt64));
  CHECK(CanConvert(DType::kBool, DType::kBool));
  CHECK(CanConvert(DType::kFloat16, DType::kFloat32));
  CHECK(CanConvert(DType::kFloat32, DType::kBFloat16));
  CHECK(CanConvert(DType::kFloat64, DType::kFloat16));
  CHECK_FALSE(CanConvert(DType::kInt64, DType::kFloat32));
  CHECK_FALSE(CanConvert(DType::kFloat8E4M3FN, DType::kFloat32));
  CHECK_FALSE(CanConvert(DType::kFloat32, DType::kInt32));
}

}  // namespace
}  // namespace zerofold::gather
