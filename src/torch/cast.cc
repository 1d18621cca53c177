#include "torch/cast.h"

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "io/cursor.h"

namespace zerofold::torch {

namespace {

// IEEE 754 binary32 / binary16 / binary64 fields.
constexpr uint32_t kF32SignBit = 0x80000000u;
constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32MantMask = 0x007FFFFFu;
constexpr uint32_t kF32QuietBit = 0x00400000u;
constexpr int kF32MantBits = 23;
constexpr int kF32Bias = 127;
constexpr uint16_t kF16SignBit = 0x8000;
constexpr uint16_t kF16Inf = 0x7C00;
constexpr int kF16MantBits = 10;
constexpr int kF16Bias = 15;
constexpr uint64_t kF64SignBit = 0x8000000000000000ull;
constexpr uint64_t kF64ExpMask = 0x7FF0000000000000ull;
constexpr uint64_t kF64MantMask = 0x000FFFFFFFFFFFFFull;
constexpr uint64_t kF64QuietBit = 0x0008000000000000ull;
constexpr int kF64MantBits = 52;

// Binary32 bit patterns at float16's limits.
constexpr uint32_t kF32HalfOverflow = 0x477FF000u;  // 65520: halfway from 65504 (max half) to 65536
constexpr uint32_t kF32HalfMinNormal = 0x38800000u; // 2^-14

bool F32IsNan(uint32_t bits) { return (bits & ~kF32SignBit) > kF32ExpMask; }

// Rounds q + r/2^shift to nearest, ties to even; r < 2^shift, shift >= 1.
uint32_t RoundNearestEven(uint32_t q, uint32_t r, int shift) {
  const uint32_t half = 1u << (shift - 1);
  if (r > half || (r == half && (q & 1u))) ++q;
  return q;
}

template <typename T>
T Load(const std::byte* p) {
  if constexpr (sizeof(T) == 2) return io::DecodeU16le(p);
  if constexpr (sizeof(T) == 4) return io::DecodeU32le(p);
  if constexpr (sizeof(T) == 8) return io::DecodeU64le(p);
}

template <typename T>
void Store(std::byte* p, T v) {
  if constexpr (sizeof(T) == 2) io::EncodeU16le(p, v);
  if constexpr (sizeof(T) == 4) io::EncodeU32le(p, v);
  if constexpr (sizeof(T) == 8) io::EncodeU64le(p, v);
}

// One converter per (from, to) pair, so the loop has no switch.
template <typename Src, typename Dst, typename Fn>
void Convert(std::span<const std::byte> src, std::span<std::byte> dst, Fn fn) {
  const size_t n = src.size() / sizeof(Src);
  for (size_t i = 0; i < n; ++i) Store<Dst>(dst.data() + i * sizeof(Dst), fn(Load<Src>(src.data() + i * sizeof(Src))));
}

// torch's is_non_overlapping_and_dense (c10/core/TensorImpl.cpp
// compute_non_overlapping_and_dense): dims of size >= 2, in stride order,
// have strides 1, size, size x size, ...
bool NonOverlappingAndDense(std::span<const int64_t> shape, std::span<const int64_t> stride) {
  if (shape.size() == 1) return shape[0] < 2 || stride[0] == 1;
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] >= 2) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return stride[a] < stride[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (stride[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// TensorIterator::reorder_dimensions: the dims innermost first, ordered by
// the operands' strides (a zero stride gives no opinion; equal strides put
// the smaller dim first), by insertion sort starting from the last dim.
std::vector<size_t> IteratorOrder(std::span<const std::vector<int64_t>> operands, std::span<const int64_t> shape) {
  const size_t nd = shape.size();
  std::vector<size_t> perm(nd);
  for (size_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) -> int {
    for (const std::vector<int64_t>& s : operands) {
      if (s[d0] == 0 || s[d1] == 0) continue;
      if (s[d0] < s[d1]) return -1;
      if (s[d0] > s[d1]) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < nd; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}

}  // namespace

BFloat16Nan TorchBFloat16Nan(std::span<const int64_t> shape, std::span<const int64_t> stride) {
  if (shape.empty()) return BFloat16Nan::kScalar;  // 0-dim: copy_ fills from the scalar
  if (std::all_of(shape.begin(), shape.end(), [](int64_t s) { return s == 1; })) return BFloat16Nan::kVector;
  std::vector<int64_t> in(stride.begin(), stride.end());
  std::vector<int64_t> out = in;
  if (!NonOverlappingAndDense(shape, stride)) {
    // empty_like(preserve_format): dense strides in the input's dim order.
    std::vector<std::vector<int64_t>> only_input = {in};
    int64_t next = 1;
    for (size_t d : IteratorOrder(only_input, shape)) {
      out[d] = next;
      next *= shape[d];
    }
  }
  std::vector<std::vector<int64_t>> ops = {out, in};
  std::vector<size_t> perm = IteratorOrder(ops, shape);
  // TensorIterator::coalesce_dimensions, innermost first: a dim joins the
  // previous one when either has size 1 or every operand steps across both
  // evenly; the loop is vectorized when the first coalesced dim is contiguous.
  std::vector<int64_t> size;
  std::vector<std::vector<int64_t>> st(2);
  for (size_t d : perm) {
    size.push_back(shape[d]);
    st[0].push_back(out[d]);
    st[1].push_back(in[d]);
  }
  size_t prev = 0;
  for (size_t dim = 1; dim < size.size(); ++dim) {
    bool joins = size[prev] == 1 || size[dim] == 1 ||
                 (st[0][prev] * size[prev] == st[0][dim] && st[1][prev] * size[prev] == st[1][dim]);
    if (joins) {
      if (size[prev] == 1) {
        st[0][prev] = st[0][dim];
        st[1][prev] = st[1][dim];
      }
      size[prev] *= size[dim];
    } else {
      ++prev;
      size[prev] = size[dim];
      st[0][prev] = st[0][dim];
      st[1][prev] = st[1][dim];
    }
  }
  return st[0][0] == 1 && st[1][0] == 1 ? BFloat16Nan::kVector : BFloat16Nan::kScalar;
}

NanRule TorchNanRule(std::span<const int64_t> shape, std::span<const int64_t> stride) {
  NanRule rule;
  rule.nan = TorchBFloat16Nan(shape, stride);
  uint64_t numel = 1;
  int64_t expected = 1;  // C-contiguous: each dim of size > 1 steps by the product of the later sizes
  bool contiguous = true;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && stride[d] != expected) contiguous = false;
    expected *= shape[d];
    numel *= static_cast<uint64_t>(shape[d]);
  }
  if (contiguous) rule.f64_vector_end = numel / kTorchFloat64ToBFloat16Vector * kTorchFloat64ToBFloat16Vector;
  return rule;
}

bool IsCastable(DType dtype) {
  return dtype == DType::kFloat64 || dtype == DType::kFloat32 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

uint16_t Float32ToFloat16(uint32_t bits) {
  const uint16_t sign = static_cast<uint16_t>((bits & kF32SignBit) >> 16);
  const uint32_t abs = bits & ~kF32SignBit;
  if (abs > kF32ExpMask) return sign | kFloat16QuietNan;
  if (abs >= kF32HalfOverflow) return sign | kF16Inf;
  const int exp = static_cast<int>(abs >> kF32MantBits);
  const uint32_t mant = abs & kF32MantMask;
  constexpr int kDrop = kF32MantBits - kF16MantBits;  // 13 bits dropped from a normal
  if (abs >= kF32HalfMinNormal) {
    const uint32_t q = (static_cast<uint32_t>(exp - kF32Bias + kF16Bias) << kF16MantBits) | (mant >> kDrop);
    // A carry out of the mantissa steps the exponent, as it should.
    return sign | static_cast<uint16_t>(RoundNearestEven(q, mant & ((1u << kDrop) - 1), kDrop));
  }
  // A float16 subnormal counts units of 2^-24; the value is m x 2^(exp-150).
  if (exp == 0) return sign;  // float32 subnormals are below 2^-126: zero
  const uint32_t m = mant | (1u << kF32MantBits);
  const int shift = (kF32Bias - 1) - exp;     // m >> shift counts units of 2^-24
  if (shift > kF32MantBits + 1) return sign;  // under half of 2^-24: rounds to zero
  return sign | static_cast<uint16_t>(RoundNearestEven(m >> shift, m & ((1u << shift) - 1), shift));
}

uint16_t Float32ToBFloat16(uint32_t bits, BFloat16Nan nan) {
  if (F32IsNan(bits)) return nan == BFloat16Nan::kVector ? kBFloat16VectorNan : kBFloat16ScalarNan;
  const uint32_t bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

uint32_t Float64ToFloat32(uint64_t bits) {
  if ((bits & ~kF64SignBit) > kF64ExpMask) {
    constexpr int kDrop = kF64MantBits - kF32MantBits;
    return static_cast<uint32_t>((bits & kF64SignBit) >> 32) | kF32ExpMask | kF32QuietBit |
           static_cast<uint32_t>((bits & kF64MantMask) >> kDrop);
  }
  // Finite values and infinities: the hardware conversion is IEEE round to
  // nearest even (the default rounding mode; zerofold never changes it).
  return std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(bits)));
}

uint64_t Float32ToFloat64(uint32_t bits) {
  if (F32IsNan(bits)) {
    constexpr int kAdd = kF64MantBits - kF32MantBits;
    return (static_cast<uint64_t>(bits & kF32SignBit) << 32) | kF64ExpMask | kF64QuietBit |
           (static_cast<uint64_t>(bits & kF32MantMask) << kAdd);
  }
  return std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(bits)));  // exact
}

uint32_t Float16ToFloat32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & kF16SignBit) << 16;
  const int exp = (bits >> kF16MantBits) & 0x1F;
  uint32_t mant = bits & 0x3FFu;
  constexpr int kAdd = kF32MantBits - kF16MantBits;
  if (exp == 0x1F) return sign | kF32ExpMask | (mant ? kF32QuietBit | (mant << kAdd) : 0);
  if (exp != 0) return sign | (static_cast<uint32_t>(exp - kF16Bias + kF32Bias) << kF32MantBits) | (mant << kAdd);
  if (mant == 0) return sign;
  // Subnormal: mant x 2^-24; normalize so the leading one is bit 10.
  int e = 1 - kF16Bias;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return sign | (static_cast<uint32_t>(e + kF32Bias) << kF32MantBits) | ((mant & 0x3FFu) << kAdd);
}

uint32_t BFloat16ToFloat32(uint16_t bits) { return static_cast<uint32_t>(bits) << 16; }

Status CastElements(DType from, DType to, std::span<const std::byte> src, std::span<std::byte> dst,
                    const NanRule& rule, uint64_t first_element) {
  const BFloat16Nan nan = rule.nan;
  if (!IsCastable(from) || !IsCastable(to))
    return Status::InvalidArgument("cannot cast " + std::string(Info(from).name) + " to " +
                                   std::string(Info(to).name));
  const size_t in_size = Info(from).itemsize, out_size = Info(to).itemsize;
  if (src.size() % in_size != 0 || dst.size() != src.size() / in_size * out_size)
    return Status::InvalidArgument("cast of " + std::to_string(src.size()) + " bytes of " +
                                   std::string(Info(from).name) + " into " + std::to_string(dst.size()) +
                                   " bytes of " + std::string(Info(to).name));
  if (from == to) {
    std::copy(src.begin(), src.end(), dst.begin());
    return Status::OK();
  }
  using D = DType;
  auto f32_from_f16 = [](uint16_t h) { return Float16ToFloat32(h); };
  switch (from) {
    case D::kFloat64:
      if (to == D::kFloat32) Convert<uint64_t, uint32_t>(src, dst, Float64ToFloat32);
      if (to == D::kFloat16)
        Convert<uint64_t, uint16_t>(src, dst, [](uint64_t v) { return Float32ToFloat16(Float64ToFloat32(v)); });
      if (to == D::kBFloat16) {
        // Elements before the scalar tail, then the tail.
        const uint64_t end = std::max(rule.f64_vector_end, first_element) - first_element;
        const size_t head = static_cast<size_t>(std::min<uint64_t>(end, src.size() / 8));
        Convert<uint64_t, uint16_t>(src.first(head * 8), dst.first(head * 2),
                                    [nan](uint64_t v) { return Float32ToBFloat16(Float64ToFloat32(v), nan); });
        Convert<uint64_t, uint16_t>(src.subspan(head * 8), dst.subspan(head * 2), [](uint64_t v) {
          return Float32ToBFloat16(Float64ToFloat32(v), BFloat16Nan::kScalar);
        });
      }
      break;
    case D::kFloat32:
      if (to == D::kFloat64) Convert<uint32_t, uint64_t>(src, dst, Float32ToFloat64);
      if (to == D::kFloat16) Convert<uint32_t, uint16_t>(src, dst, Float32ToFloat16);
      if (to == D::kBFloat16) Convert<uint32_t, uint16_t>(src, dst, [nan](uint32_t v) { return Float32ToBFloat16(v, nan); });
      break;
    case D::kFloat16:
      if (to == D::kFloat64)
        Convert<uint16_t, uint64_t>(src, dst, [](uint16_t v) { return Float32ToFloat64(Float16ToFloat32(v)); });
      if (to == D::kFloat32) Convert<uint16_t, uint32_t>(src, dst, f32_from_f16);
      // torch converts float16 to bfloat16 in its scalar loop, whatever the layout.
      if (to == D::kBFloat16)
        Convert<uint16_t, uint16_t>(src, dst, [](uint16_t v) {
          return Float32ToBFloat16(Float16ToFloat32(v), BFloat16Nan::kScalar);
        });
      break;
    case D::kBFloat16:
      if (to == D::kFloat64)
        Convert<uint16_t, uint64_t>(src, dst, [](uint16_t v) { return Float32ToFloat64(BFloat16ToFloat32(v)); });
      if (to == D::kFloat32) Convert<uint16_t, uint32_t>(src, dst, BFloat16ToFloat32);
      if (to == D::kFloat16)
        Convert<uint16_t, uint16_t>(src, dst, [](uint16_t v) { return Float32ToFloat16(BFloat16ToFloat32(v)); });
      break;
    default: break;
  }
  return Status::OK();
}

}  // namespace zerofold::torch
