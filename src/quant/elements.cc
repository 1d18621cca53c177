#include "quant/elements.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "torch/cast.h"

namespace zerofold::quant {

namespace {

template <typename T>
T Load(std::span<const std::byte> bytes, uint64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

float DecodeE4M3(uint8_t code) {
  const bool negative = (code & 0x80) != 0;
  const int exponent = (code >> 3) & 0x0F;
  const int mantissa = code & 0x07;
  float v;
  if (exponent == 0x0F && mantissa == 0x07) {
    // c10's fp8e4m3fn_to_fp32_value widens the NaN's bits: 0x7FF00000.
    return std::bit_cast<float>((negative ? 0x80000000u : 0u) | 0x7FF00000u);
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 x 2^-6
  } else {
    v = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return negative ? -v : v;
}

float DecodeE2M1(uint8_t code) {
  static constexpr float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = kValues[code & 0x07];
  return (code & 0x08) != 0 ? -v : v;
}

float DecodeE8M0(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

std::optional<size_t> ScaleItemSize(safetensors::Dtype dtype) {
  using D = safetensors::Dtype;
  switch (dtype) {
    case D::F32: case D::I32: case D::U32: return 4;
    case D::F16: case D::BF16: case D::I16: case D::U16: return 2;
    case D::F8_E4M3: case D::F8_E8M0: case D::I8: case D::U8: return 1;
    case D::I64: case D::F64: return 8;
    default: return std::nullopt;
  }
}

float ScaleAt(safetensors::Dtype dtype, std::span<const std::byte> bytes, uint64_t i) {
  using D = safetensors::Dtype;
  switch (dtype) {
    case D::F32: return std::bit_cast<float>(Load<uint32_t>(bytes, i));
    case D::F64: return static_cast<float>(std::bit_cast<double>(Load<uint64_t>(bytes, i)));
    case D::F16: return std::bit_cast<float>(torch::Float16ToFloat32(Load<uint16_t>(bytes, i)));
    case D::BF16: return std::bit_cast<float>(torch::BFloat16ToFloat32(Load<uint16_t>(bytes, i)));
    case D::F8_E4M3: return DecodeE4M3(Load<uint8_t>(bytes, i));
    case D::F8_E8M0: return DecodeE8M0(Load<uint8_t>(bytes, i));
    default: return static_cast<float>(IntegerAt(dtype, bytes, i));
  }
}

int64_t IntegerAt(safetensors::Dtype dtype, std::span<const std::byte> bytes, uint64_t i) {
  using D = safetensors::Dtype;
  switch (dtype) {
    case D::I8: return Load<int8_t>(bytes, i);
    case D::U8: return Load<uint8_t>(bytes, i);
    case D::I16: return Load<int16_t>(bytes, i);
    case D::U16: return Load<uint16_t>(bytes, i);
    case D::I32: return Load<int32_t>(bytes, i);
    case D::U32: return Load<uint32_t>(bytes, i);
    case D::I64: return Load<int64_t>(bytes, i);
    default: return 0;
  }
}

void Store(Target target, float v, std::span<std::byte> out, uint64_t i) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if (target == Target::kFloat32) {
    std::memcpy(out.data() + i * 4, &bits, 4);
    return;
  }
  const uint16_t b = RoundToBFloat16(v);
  std::memcpy(out.data() + i * 2, &b, 2);
}

}  // namespace zerofold::quant
