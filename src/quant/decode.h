// Decoding the rows of one quantized weight (quant/scheme.h Group) from the
// bytes of its tensors, a chunk of rows at a time, so a job holds only the
// chunk: the rows' packed values, the scale rows (and zero point rows)
// that cover them. Pure: the caller reads the bytes (Chunk says which).
#ifndef ZEROFOLD_QUANT_DECODE_H_
#define ZEROFOLD_QUANT_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "quant/elements.h"
#include "quant/scheme.h"
#include "safetensors/dtype.h"

namespace zerofold::quant {

// The byte ranges one chunk of rows [r0, r1) needs, relative to the start
// of each tensor's bytes.
struct ChunkRanges {
  uint64_t weight_begin = 0, weight_end = 0;
  uint64_t scale_begin = 0, scale_end = 0;
  uint64_t zero_begin = 0, zero_end = 0;  // empty without a zero point
};

// Bytes of one row of packed values.
uint64_t WeightRowBytes(const Group& g);
// REQUIRES: r0 < r1 <= g.rows. `scale` and `zero` are the group's scale and
// zero point tensors (zero: nullptr when none).
ChunkRanges RangesOf(const Group& g, const SourceTensor& scale, const SourceTensor* zero, uint64_t r0, uint64_t r1);

// The bytes of a chunk, as RangesOf gave them, and the global scale.
struct Chunk {
  uint64_t r0 = 0, r1 = 0;
  std::span<const std::byte> weight;
  std::span<const std::byte> scale;
  std::span<const std::byte> zero;
  safetensors::Dtype scale_dtype = safetensors::Dtype::F32;
  safetensors::Dtype zero_dtype = safetensors::Dtype::I32;
  float global = 1.0f;  // the group's global scale (1 without one)
};

// The zero point of row r in scale grid cell `cell` (0 without zero points).
float ZeroAt(const Group& g, const Chunk& chunk, uint64_t r, uint64_t cell);

// Element (r, c) of the weight, r in [chunk.r0, chunk.r1), in float32.
float ValueAt(const Group& g, const Chunk& chunk, uint64_t r, uint64_t c);

// Rows [r0, r1) into `out`, (r1 - r0) x cols elements of `target`, row-major.
void DecodeRows(const Group& g, const Chunk& chunk, Target target, std::span<std::byte> out);

// A transposed group (gpt-oss): writes element (r, c) of the chunk's rows,
// c in [c0, c1), as element (c - c0) x stride + (r - first) of `out`: with
// stride N and first e x N, the output rows (input columns) [c0, c1) of
// expert e, of which the chunk holds some or all of the N rows.
void DecodeColumns(const Group& g, const Chunk& chunk, uint64_t c0, uint64_t c1, uint64_t stride, uint64_t first,
                   Target target, std::span<std::byte> out);

}  // namespace zerofold::quant

#endif  // ZEROFOLD_QUANT_DECODE_H_
