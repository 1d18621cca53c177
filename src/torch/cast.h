// Casting floating-point tensor bytes between float64, float32, float16 and
// bfloat16, bit for bit as torch 1.13's `tensor.to(dtype)` does on x86-64
// CPUs with AVX2 (measured against Debian's python3-torch; the interop test
// tests/interop/test_safetensors_out.py checks it on random and edge values).
//
// What torch does, and so what these functions do:
//   - float32 -> float16: IEEE round to nearest even, subnormals kept,
//     overflow to inf; every NaN becomes sign | 0x7E00 (c10::Half).
//   - float32 -> bfloat16: round to nearest even by adding 0x7FFF plus the
//     lowest kept bit (c10::BFloat16 round_to_nearest_even). A NaN becomes
//     0xFFFF where torch's vectorized conversion runs and 0x7FC0 where its
//     scalar loop runs; which one runs depends on the view's layout (see
//     TorchBFloat16Nan). The sign of a NaN is dropped either way.
//   - float64 -> float32: IEEE round to nearest even; a NaN keeps its sign
//     and the top 23 bits of its payload, with the quiet bit set (x86 cvtsd2ss).
//   - float64 -> float16 / bfloat16: through float32, so rounded twice, as
//     c10::Half and c10::BFloat16 only have float constructors. One NaN
//     difference: torch's float64 -> bfloat16 loop converts whole vectors of
//     16 and the rest of each inner loop (whose length depends on the layout
//     and on how many threads split it) in its scalar loop, so the NaNs of
//     those last elements come out 0x7FC0; we write the view's one NaN
//     (TorchBFloat16Nan) for every element.
//   - float16 -> float32/64: exact; a NaN gets the quiet bit set.
//   - bfloat16 -> float32: exact, bits shifted (a signaling NaN stays one);
//     -> float64 through float32 (the quiet bit is set).
//   - float16 <-> bfloat16: through float32; float16 -> bfloat16 always
//     takes torch's scalar path (NaN 0x7FC0).
//
// Pure functions, thread-safe.
#ifndef ZEROFOLD_TORCH_CAST_H_
#define ZEROFOLD_TORCH_CAST_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "torch/dtype.h"
#include "zerofold/status.h"

namespace zerofold::torch {

// The NaN torch writes when it rounds float32 or float64 to bfloat16.
enum class BFloat16Nan : uint8_t {
  kVector,  // 0xFFFF: at::vec::convert (AVX2/AVX-512 cvtfp32_bf16)
  kScalar,  // 0x7FC0: c10::BFloat16 round_to_nearest_even
};

constexpr uint16_t kBFloat16VectorNan = 0xFFFF;
constexpr uint16_t kBFloat16ScalarNan = 0x7FC0;
constexpr uint16_t kFloat16QuietNan = 0x7E00;

// Which loop torch 1.13's `.to()` runs for a view of this shape and stride
// (elements): the vectorized one when, after TensorIterator orders and
// coalesces the dims of the output (same strides as a non-overlapping dense
// input, else dense strides in the input's order), the innermost dim is
// contiguous in both; a 0-dim tensor always takes the scalar loop, a
// tensor of one element in one or more dims the vectorized one.
// REQUIRES: shape.size() == stride.size().
BFloat16Nan TorchBFloat16Nan(std::span<const int64_t> shape, std::span<const int64_t> stride);

// True for the dtypes these functions convert: float64, float32, float16, bfloat16.
bool IsCastable(DType dtype);

// Element conversions on bit patterns.
uint16_t Float32ToFloat16(uint32_t bits);
uint16_t Float32ToBFloat16(uint32_t bits, BFloat16Nan nan);
uint32_t Float64ToFloat32(uint64_t bits);
uint64_t Float32ToFloat64(uint32_t bits);
uint32_t Float16ToFloat32(uint16_t bits);
uint32_t BFloat16ToFloat32(uint16_t bits);

// Converts whole little-endian elements of `from` in src to `to` in dst.
// kInvalidArgument if a dtype is not castable, src is not a whole number of
// elements, or dst does not hold exactly as many elements. from == to copies.
Status CastElements(DType from, DType to, std::span<const std::byte> src, std::span<std::byte> dst,
                    BFloat16Nan nan);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_CAST_H_
