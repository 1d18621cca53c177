// The element decoders on hand-computed values: E4M3 normals, subnormals,
// the largest value, -0 and NaN; the E2M1 table with -0; E8M0 and the
// gpt-oss scale (2^128 = inf); float32 -> bfloat16 ties to even and NaN.
#include "quant/elements.h"

#include "torch/cast.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

namespace zerofold::quant {
namespace {

TEST_CASE("DecodeE4M3: normals, subnormals, max, signed zero, NaN") {
  CHECK(DecodeE4M3(0x38) == 1.0f);          // exponent 7 (bias 7), mantissa 0
  CHECK(DecodeE4M3(0x3C) == 1.5f);          // mantissa 4/8
  CHECK(DecodeE4M3(0xC0) == -2.0f);
  CHECK(DecodeE4M3(0x7E) == 448.0f);        // S.1111.110: the largest finite
  CHECK(DecodeE4M3(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(DecodeE4M3(0x07) == 7.0f * std::ldexp(1.0f, -9));
  CHECK(DecodeE4M3(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(DecodeE4M3(0x00) == 0.0f);
  CHECK(!std::signbit(DecodeE4M3(0x00)));
  CHECK(DecodeE4M3(0x80) == 0.0f);
  CHECK(std::signbit(DecodeE4M3(0x80)));
  CHECK(std::bit_cast<uint32_t>(DecodeE4M3(0x7F)) == 0x7FF00000u);  // torch's float8 -> float bits
  CHECK(std::bit_cast<uint32_t>(DecodeE4M3(0xFF)) == 0xFFF00000u);
  CHECK(std::bit_cast<uint32_t>(DecodeE4M3(0x7F) * 0.25f) == 0x7FF00000u);  // a product keeps them
  CHECK(DecodeE4M3(0x78) == 256.0f);        // 1.1111.000 is a number in e4m3fn, not inf
}

TEST_CASE("DecodeE2M1: the FP4 table, code 8 is -0") {
  const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (uint8_t c = 0; c < 16; ++c) {
    CHECK(DecodeE2M1(c) == want[c]);
    CHECK(std::signbit(DecodeE2M1(c)) == (c >= 8));
    CHECK(DecodeE2M1(static_cast<uint8_t>(c | 0xF0)) == want[c]);  // only the low nibble counts
  }
}

TEST_CASE("DecodeE8M0") {
  CHECK(DecodeE8M0(127) == 1.0f);
  CHECK(DecodeE8M0(0) == std::ldexp(1.0f, -127));  // a float32 subnormal, exact
  CHECK(DecodeE8M0(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(DecodeE8M0(255)));
  CHECK(DecodeE8M0(130) == 8.0f);
  CHECK(std::isinf(6.0f * DecodeE8M0(254)));  // 6 x 2^127 overflows float32
}

TEST_CASE("ScaleAt and IntegerAt read little-endian elements") {
  std::vector<std::byte> b(8);
  const float f = 0.375f;
  std::memcpy(b.data() + 4, &f, 4);
  CHECK(ScaleAt(safetensors::Dtype::F32, b, 1) == 0.375f);
  const uint16_t bf = 0x3EC0;  // bf16 0.375
  std::memcpy(b.data(), &bf, 2);
  CHECK(ScaleAt(safetensors::Dtype::BF16, b, 0) == 0.375f);
  const uint16_t h = 0x3600;  // fp16 0.375
  std::memcpy(b.data() + 2, &h, 2);
  CHECK(ScaleAt(safetensors::Dtype::F16, b, 1) == 0.375f);
  b[0] = std::byte{0x38};
  CHECK(ScaleAt(safetensors::Dtype::F8_E4M3, b, 0) == 1.0f);
  b[0] = std::byte{0xFE};
  CHECK(IntegerAt(safetensors::Dtype::I8, b, 0) == -2);
  CHECK(IntegerAt(safetensors::Dtype::U8, b, 0) == 254);
  CHECK(!ScaleItemSize(safetensors::Dtype::F4).has_value());
}

uint16_t Bf16(float v) {
  std::vector<std::byte> out(2);
  Store(Target::kBFloat16, v, out, 0);
  uint16_t b;
  std::memcpy(&b, out.data(), 2);
  return b;
}

TEST_CASE("RoundToBFloat16 is torch::Float32ToBFloat16 with the vector NaN") {
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u,
                        0x7FC00000u, 0xFF800001u, 0x00000001u, 0x0080FFFFu, 0xC0490FDBu})
    CHECK(RoundToBFloat16(std::bit_cast<float>(bits)) == torch::Float32ToBFloat16(bits, torch::BFloat16Nan::kVector));
}

TEST_CASE("Store: bfloat16 rounds to nearest even; float32 as it is") {
  CHECK(Bf16(1.0f) == 0x3F80);
  CHECK(Bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80);  // tie, even stays
  CHECK(Bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82);  // tie, odd rounds up
  CHECK(Bf16(std::bit_cast<float>(0x3F808001u)) == 0x3F81);  // past the tie
  CHECK(Bf16(-0.0f) == 0x8000);
  CHECK(Bf16(std::bit_cast<float>(0x7F7FFFFFu)) == 0x7F80);  // max float rounds to inf
  CHECK(Bf16(std::nanf("")) == 0xFFFF);
  CHECK(Bf16(INFINITY) == 0x7F80);
  std::vector<std::byte> out(8);
  Store(Target::kFloat32, 0.1f, out, 1);
  float back;
  std::memcpy(&back, out.data() + 4, 4);
  CHECK(back == 0.1f);
}

}  // namespace
}  // namespace zerofold::quant
