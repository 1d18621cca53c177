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
//     c10::Half and c10::BFloat16 only have float constructors. torch's
//     float64 -> bfloat16 loop converts whole vectors of 16 elements and the
//     rest of each inner loop in its scalar loop, so the NaNs of those last
//     elements come out 0x7FC0 (see NanRule).
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

// Elements per vector of torch's float64 -> bfloat16 loop (AVX2 capability,
// what torch 1.13 runs by default on x86-64, AVX-512 machines included).
constexpr uint64_t kTorchFloat64ToBFloat16Vector = 16;

// Which NaN each element of a view gets when rounded to bfloat16.
struct NanRule {
  BFloat16Nan nan = BFloat16Nan::kVector;
  // float64 sources only: elements at this index (C order) and past it are
  // in the scalar tail of torch's loop and get kScalar's NaN.
  uint64_t f64_vector_end = UINT64_MAX;
};

// TorchBFloat16Nan's choice; for a C-contiguous view, whose elements
// torch's loop takes in one inner loop, the float64 tail starts at numel
// rounded down to a multiple of kTorchFloat64ToBFloat16Vector. Not modeled
// (f64_vector_end stays UINT64_MAX): the tails of other layouts' inner
// loops, and the split of views of 32768 elements or more among threads,
// which depends on torch's thread count.
NanRule TorchNanRule(std::span<const int64_t> shape, std::span<const int64_t> stride);

// True for the dtypes these functions convert: float64, float32, float16, bfloat16.
bool IsCastable(DType dtype);

// Element conversions on bit patterns.
uint16_t Float32ToFloat16(uint32_t bits);
uint16_t Float32ToBFloat16(uint32_t bits, BFloat16Nan nan);
uint32_t Float64ToFloat32(uint64_t bits);
uint64_t Float32ToFloat64(uint32_t bits);
uint32_t Float16ToFloat32(uint16_t bits);
uint32_t BFloat16ToFloat32(uint16_t bits);

// Converts whole little-endian elements of `from` in src to `to` in dst;
// src's first element is element `first_element` of its view (for
// NanRule::f64_vector_end). kInvalidArgument if a dtype is not castable,
// src is not a whole number of elements, or dst does not hold exactly as
// many elements. from == to copies.
Status CastElements(DType from, DType to, std::span<const std::byte> src, std::span<std::byte> dst,
                    const NanRule& rule, uint64_t first_element = 0);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_CAST_H_
