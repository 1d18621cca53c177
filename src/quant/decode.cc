#include "quant/decode.h"

#include <algorithm>
#include <cstring>

namespace zerofold::quant {

namespace {

uint32_t Word(std::span<const std::byte> bytes, uint64_t i) {
  uint32_t w;
  std::memcpy(&w, bytes.data() + i * 4, 4);
  return w;
}

// `bits` bits at bit position `bit` of a little-endian stream of 32-bit
// words, word k at words[k * stride] (compressed-tensors pack_to_int32:
// element i at bits [i*b, i*b + b), split across two words where it must).
uint32_t BitsAt(std::span<const std::byte> bytes, uint64_t first_word, uint64_t stride, uint64_t bit, uint32_t bits) {
  const uint64_t word = bit / 32;
  const uint32_t shift = static_cast<uint32_t>(bit % 32);
  const uint32_t mask = (uint32_t{1} << bits) - 1;
  uint32_t v = Word(bytes, first_word + word * stride) >> shift;
  if (shift + bits > 32) v |= Word(bytes, first_word + (word + 1) * stride) << (32 - shift);
  return v & mask;
}

}  // namespace

uint64_t WeightRowBytes(const Group& g) {
  switch (g.coding) {
    case Coding::kE4M3: case Coding::kInt8: return g.cols;
    case Coding::kE2M1: return g.cols / 2;
    case Coding::kIntPacked: return (g.cols * g.bits + 31) / 32 * 4;
  }
  return 0;
}

ChunkRanges RangesOf(const Group& g, const SourceTensor& scale, const SourceTensor* zero, uint64_t r0, uint64_t r1) {
  ChunkRanges c;
  const uint64_t row = WeightRowBytes(g);
  c.weight_begin = r0 * row;
  c.weight_end = r1 * row;
  const uint64_t item = *ScaleItemSize(scale.dtype);
  const uint64_t s0 = r0 / g.block_rows, s1 = (r1 - 1) / g.block_rows + 1;
  c.scale_begin = s0 * g.scale_cols * item;
  c.scale_end = s1 * g.scale_cols * item;
  if (zero != nullptr) {
    if (g.zero_point_packed) {
      const uint64_t w0 = r0 * g.bits / 32, w1 = ((r1 * g.bits) + 31) / 32;
      c.zero_begin = w0 * g.scale_cols * 4;
      c.zero_end = w1 * g.scale_cols * 4;
    } else {
      const uint64_t zitem = *ScaleItemSize(zero->dtype);
      c.zero_begin = s0 * g.scale_cols * zitem;
      c.zero_end = s1 * g.scale_cols * zitem;
    }
  }
  return c;
}

float ZeroAt(const Group& g, const Chunk& k, uint64_t r, uint64_t cell) {
  if (k.zero.empty()) return 0.0f;
  if (!g.zero_point_packed) return ScaleAt(k.zero_dtype, k.zero, cell);
  const int32_t offset = int32_t{1} << (g.bits - 1);
  const uint64_t w0 = k.r0 * g.bits / 32;  // the first word row the chunk holds
  const uint64_t bit = r * g.bits - w0 * 32;
  return static_cast<float>(static_cast<int32_t>(BitsAt(k.zero, cell % g.scale_cols, g.scale_cols, bit, g.bits)) -
                            offset);
}

float ValueAt(const Group& g, const Chunk& k, uint64_t r, uint64_t c) {
  const uint64_t row_bytes = WeightRowBytes(g);
  const uint64_t local = r - k.r0;
  const uint64_t cell = (r / g.block_rows - k.r0 / g.block_rows) * g.scale_cols +
                        (g.g_idx.empty() ? c / g.block_cols : g.g_idx[c]);
  switch (g.coding) {
    case Coding::kE4M3: {
      const float x = DecodeE4M3(static_cast<uint8_t>(k.weight[local * row_bytes + c]));
      return x * ScaleAt(k.scale_dtype, k.scale, cell);
    }
    case Coding::kE2M1: {
      const uint8_t byte = static_cast<uint8_t>(k.weight[local * row_bytes + c / 2]);
      const float x = DecodeE2M1((c & 1) != 0 ? byte >> 4 : byte & 0x0F);
      if (g.e8m0_scale) return x * DecodeE8M0(static_cast<uint8_t>(k.scale[cell]));
      const float s = ScaleAt(k.scale_dtype, k.scale, cell);
      return x * (g.global_divides ? s / k.global : s * k.global);
    }
    case Coding::kInt8: {
      const float q = static_cast<float>(static_cast<int8_t>(k.weight[local * row_bytes + c]));
      return (q - ZeroAt(g, k, r, cell)) * ScaleAt(k.scale_dtype, k.scale, cell);
    }
    case Coding::kIntPacked: {
      const int32_t offset = int32_t{1} << (g.bits - 1);
      const int32_t q = static_cast<int32_t>(BitsAt(k.weight, local * row_bytes / 4, 1, c * g.bits, g.bits)) - offset;
      return (static_cast<float>(q) - ZeroAt(g, k, r, cell)) * ScaleAt(k.scale_dtype, k.scale, cell);
    }
  }
  return 0.0f;
}

namespace {

// Decoded values of every E4M3 byte and E2M1 nibble (DecodeE4M3, DecodeE2M1).
struct Tables {
  float e4m3[256];
  float e2m1[16];
  Tables() {
    for (int i = 0; i < 256; ++i) e4m3[i] = DecodeE4M3(static_cast<uint8_t>(i));
    for (int i = 0; i < 16; ++i) e2m1[i] = DecodeE2M1(static_cast<uint8_t>(i));
  }
};
const Tables& Lut() {
  static const Tables tables;
  return tables;
}

// Element `i` of `out` as T: float32, or bfloat16 bits through Store's rounding.
template <typename T>
void Put(float v, std::byte* out, uint64_t i);
template <>
void Put<float>(float v, std::byte* out, uint64_t i) {
  std::memcpy(out + i * 4, &v, 4);
}
template <>
void Put<uint16_t>(float v, std::byte* out, uint64_t i) {
  const uint16_t b = RoundToBFloat16(v);
  std::memcpy(out + i * 2, &b, 2);
}

// Where element (r, c) goes: (r - first) x row_stride + (c - c0) x col_stride.
struct Placement {
  uint64_t c0, c1;   // the columns decoded
  uint64_t first;    // the row at output position 0
  uint64_t row_stride, col_stride;
};

// DecodeRows and DecodeColumns for one target: per row and scale block, the
// scale computed once (the same float32 operations as ValueAt), then the
// block's values.
template <typename T>
void Decode(const Group& g, const Chunk& k, const Placement& p, std::byte* out) {
  const Tables& lut = Lut();
  const uint64_t row_bytes = WeightRowBytes(g);
  const auto* w = reinterpret_cast<const uint8_t*>(k.weight.data());
  if (p.c0 >= p.c1) return;
  for (uint64_t r = k.r0; r < k.r1; ++r) {
    const uint8_t* row = w + (r - k.r0) * row_bytes;
    const uint64_t first_cell = (r / g.block_rows - k.r0 / g.block_rows) * g.scale_cols;
    const uint64_t base = (r - p.first) * p.row_stride;
    for (uint64_t b = p.c0 / g.block_cols; b <= (p.c1 - 1) / g.block_cols; ++b) {
      const uint64_t c0 = std::max(p.c0, b * g.block_cols), c1 = std::min(p.c1, (b + 1) * g.block_cols);
      const uint64_t cell = first_cell + b;
      auto at = [&](uint64_t c) { return base + (c - p.c0) * p.col_stride; };
      if (!g.g_idx.empty()) {  // activation ordering: each column its own group
        for (uint64_t c = c0; c < c1; ++c) Put<T>(ValueAt(g, k, r, c), out, at(c));
        continue;
      }
      if (g.coding == Coding::kIntPacked) {
        const float s = ScaleAt(k.scale_dtype, k.scale, cell), z = ZeroAt(g, k, r, cell);
        const int32_t offset = int32_t{1} << (g.bits - 1);
        const uint64_t first_word = (r - k.r0) * row_bytes / 4;
        for (uint64_t c = c0; c < c1; ++c) {
          const int32_t q = static_cast<int32_t>(BitsAt(k.weight, first_word, 1, c * g.bits, g.bits)) - offset;
          Put<T>((static_cast<float>(q) - z) * s, out, at(c));
        }
        continue;
      }
      if (g.coding == Coding::kE2M1) {
        float s;
        if (g.e8m0_scale) {
          s = DecodeE8M0(static_cast<uint8_t>(k.scale[cell]));
        } else {
          const float x = ScaleAt(k.scale_dtype, k.scale, cell);
          s = g.global_divides ? x / k.global : x * k.global;
        }
        for (uint64_t c = c0; c < c1; ++c) {
          const uint8_t byte = row[c / 2];
          Put<T>(lut.e2m1[(c & 1) != 0 ? byte >> 4 : byte & 0x0F] * s, out, at(c));
        }
        continue;
      }
      const float s = ScaleAt(k.scale_dtype, k.scale, cell);
      if (g.coding == Coding::kE4M3) {
        for (uint64_t c = c0; c < c1; ++c) Put<T>(lut.e4m3[row[c]] * s, out, at(c));
      } else {  // kInt8
        const float z = ZeroAt(g, k, r, cell);
        for (uint64_t c = c0; c < c1; ++c) Put<T>((static_cast<float>(static_cast<int8_t>(row[c])) - z) * s, out, at(c));
      }
    }
  }
}

void DecodeInto(const Group& g, const Chunk& chunk, const Placement& p, Target target, std::span<std::byte> out) {
  if (target == Target::kFloat32) Decode<float>(g, chunk, p, out.data());
  else Decode<uint16_t>(g, chunk, p, out.data());
}

}  // namespace

void DecodeRows(const Group& g, const Chunk& chunk, Target target, std::span<std::byte> out) {
  DecodeInto(g, chunk, {0, g.cols, chunk.r0, g.cols, 1}, target, out);
}

void DecodeColumns(const Group& g, const Chunk& chunk, uint64_t c0, uint64_t c1, uint64_t stride, uint64_t first,
                   Target target, std::span<std::byte> out) {
  DecodeInto(g, chunk, {c0, c1, first, 1, stride}, target, out);
}

}  // namespace zerofold::quant
