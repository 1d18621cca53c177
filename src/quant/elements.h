// Element decoding for the quantized checkpoint schemes (quant/scheme.h):
// the narrow float formats a packed weight or its scales are stored in,
// decoded exactly to float32, and the one rounding every scheme ends with.
//
// Formats (OCP Microscaling Formats (MX) v1.0 and torch's float8 types):
//   E4M3FN  torch.float8_e4m3fn, safetensors F8_E4M3: 1 sign, 4 exponent
//           (bias 7), 3 mantissa bits; no infinity; S.1111.111 is NaN (as
//           float32 sign | 0x7FF00000, the bits torch's conversion gives it,
//           which a product keeps); the largest finite value is 448;
//           subnormals m x 2^-9.
//   E2M1    FP4: 1 sign, 2 exponent (bias 1), 1 mantissa bit; the values
//           0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives (transformers'
//           integrations/mxfp4.py FP4_VALUES, compressed-tensors'
//           kE2M1ToFloat): code 8 is -0.0. Two to a byte, the element of
//           even index in the low nibble (transformers convert_moe_packed_tensors
//           `blk & 0x0F` to columns 0::2; compressed-tensors pack_fp4_to_uint8
//           `indices[:, 0] | (indices[:, 1] << 4)`; ModelOpt NVFP4QTensor).
//   E8M0    a power of two 2^(e - 127) (torch.float8_e8m0fnu: 0xFF is NaN).
//
// Pure functions, thread-safe.
#ifndef ZEROFOLD_QUANT_ELEMENTS_H_
#define ZEROFOLD_QUANT_ELEMENTS_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "safetensors/dtype.h"

namespace zerofold::quant {

float DecodeE4M3(uint8_t code);
// The low four bits of `code`.
float DecodeE2M1(uint8_t code);
// torch.float8_e8m0fnu: 2^(code - 127), NaN for 0xFF (OCP MX v1.0). The
// MXFP4 scale of every scheme: transformers' convert_moe_packed_tensors
// computes torch.ldexp(x, code - 127), the same for every other code (0xFF
// gives it 2^128 = inf).
float DecodeE8M0(uint8_t code);

// The element types scales, zero points and global scales come in.
// nullopt for a dtype none of the schemes stores them in.
std::optional<size_t> ScaleItemSize(safetensors::Dtype dtype);
// Element `i` of `bytes` (little-endian, of `dtype`: F32, F16, BF16, F8_E4M3,
// F8_E8M0, or an integer type) as float32. REQUIRES: ScaleItemSize(dtype)
// and bytes holding element i.
float ScaleAt(safetensors::Dtype dtype, std::span<const std::byte> bytes, uint64_t i);
// Element `i` of an integer tensor (I8, U8, I16, I32, I64) as int64.
int64_t IntegerAt(safetensors::Dtype dtype, std::span<const std::byte> bytes, uint64_t i);

// The target element types of --dequantize.
enum class Target : uint8_t { kBFloat16, kFloat32 };
inline size_t TargetItemSize(Target t) { return t == Target::kBFloat16 ? 2 : 4; }
// `v` rounded to bfloat16 bits: torch::Float32ToBFloat16(bits,
// BFloat16Nan::kVector) (torch/cast.h: round to nearest even, a NaN 0xFFFF
// as torch's vectorized float32 -> bfloat16 conversion of a contiguous
// tensor writes it), inline for the decode loops.
inline uint16_t RoundToBFloat16(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFF;
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Stores `v` as element `i` of `out`: float32 as it is, bfloat16 as
// RoundToBFloat16.
void Store(Target target, float v, std::span<std::byte> out, uint64_t i);

}  // namespace zerofold::quant

#endif  // ZEROFOLD_QUANT_ELEMENTS_H_
