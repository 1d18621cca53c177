// Row decoding of hand-built groups: a partial trailing block of an FP8
// block grid read from a chunk in the middle; 3-bit values straddling
// int32 words (compressed-tensors' dense packing) and zero points packed
// along dim 0; E2M1 nibble order and gpt-oss's transposed columns; NVFP4's
// global scale multiplied (ModelOpt) and divided (compressed-tensors).
#include "quant/decode.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace zerofold::quant {
namespace {

std::vector<std::byte> F32s(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> Floats(const std::vector<std::byte>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// Dense little-endian bit stream of `bits`-bit values stored + 2^(bits-1).
std::vector<uint32_t> Pack(const std::vector<int>& q, uint32_t bits) {
  std::vector<uint32_t> words((q.size() * bits + 31) / 32 + 1, 0);
  for (size_t i = 0; i < q.size(); ++i) {
    const uint64_t u = static_cast<uint64_t>(q[i] + (1 << (bits - 1)));
    const uint64_t bit = i * bits;
    words[bit / 32] |= static_cast<uint32_t>(u << (bit % 32));
    if (bit % 32 + bits > 32) words[bit / 32 + 1] |= static_cast<uint32_t>(u >> (32 - bit % 32));
  }
  words.resize((q.size() * bits + 31) / 32);
  return words;
}

// A group of rows x cols values in blocks of block_rows x block_cols.
Group Matrix(Coding coding, uint64_t rows, uint64_t cols, uint64_t block_rows, uint64_t block_cols) {
  Group g;
  g.coding = coding;
  g.rows = rows;
  g.cols = cols;
  g.block_rows = block_rows;
  g.block_cols = block_cols;
  g.scale_cols = (cols + block_cols - 1) / block_cols;
  return g;
}

TEST_CASE("fp8 block: a chunk of rows 1..2 of 3 x 5 in 2 x 2 blocks, partial at the end") {
  Group g = Matrix(Coding::kE4M3, 3, 5, 2, 2);
  SourceTensor scale{"s", safetensors::Dtype::F32, {2, 3}, 0, 0, 24, {}};
  const ChunkRanges r = RangesOf(g, scale, nullptr, 1, 3);
  CHECK(r.weight_begin == 5);
  CHECK(r.weight_end == 15);
  CHECK(r.scale_begin == 0);   // row 1 is in grid row 0
  CHECK(r.scale_end == 24);    // row 2 in grid row 1
  std::vector<std::byte> w(10, std::byte{0x38});  // 1.0
  w[9] = std::byte{0xC4};                         // -3.0 at (2, 4)
  std::vector<std::byte> s = F32s({1, 2, 3, 4, 5, 6});
  Chunk c{1, 3, w, s, {}, safetensors::Dtype::F32, safetensors::Dtype::I32, 1.0f};
  std::vector<std::byte> out(10 * 4);
  DecodeRows(g, c, Target::kFloat32, out);
  CHECK(Floats(out) == std::vector<float>{1, 1, 2, 2, 3, 4, 4, 5, 5, -18});
  // A chunk starting in grid row 1 reads from there.
  const ChunkRanges r2 = RangesOf(g, scale, nullptr, 2, 3);
  CHECK(r2.scale_begin == 12);
  Chunk c2{2, 3, std::span(w).subspan(5), std::span(s).subspan(12), {}, safetensors::Dtype::F32,
           safetensors::Dtype::I32, 1.0f};
  CHECK(ValueAt(g, c2, 2, 4) == -18.0f);
}

TEST_CASE("int-packed: 3-bit values across word boundaries, packed zero points along dim 0") {
  Group g = Matrix(Coding::kIntPacked, 11, 13, 1, 13);
  g.bits = 3;
  std::vector<int> q;
  for (int i = 0; i < 13; ++i) q.push_back(i % 8 - 4);
  std::vector<uint32_t> row = Pack(q, 3);  // 2 words: element 10 spans bits 30..32
  REQUIRE(row.size() == 2);
  CHECK(WeightRowBytes(g) == 8);
  std::vector<int> zp;
  for (int r = 0; r < 11; ++r) zp.push_back(r % 8 - 4);
  std::vector<uint32_t> zw = Pack(zp, 3);  // one column: [2 words, 1]
  SourceTensor scale{"s", safetensors::Dtype::F32, {11, 1}, 0, 0, 44, {}};
  SourceTensor zero{"z", safetensors::Dtype::I32, {2, 1}, 0, 0, 8, {}};
  g.zero_point = 1;
  g.zero_point_packed = true;
  const ChunkRanges r = RangesOf(g, scale, &zero, 10, 11);
  CHECK(r.zero_begin == 0);  // row 10: bits 30..32, words 0 and 1
  CHECK(r.zero_end == 8);
  std::vector<std::byte> w(8), z(8);
  std::memcpy(w.data(), row.data(), 8);
  std::memcpy(z.data(), zw.data(), 8);
  std::vector<std::byte> s = F32s({0.5f});
  Chunk c{10, 11, w, s, z, safetensors::Dtype::F32, safetensors::Dtype::I32, 1.0f};
  for (int col = 0; col < 13; ++col) CHECK(ValueAt(g, c, 10, col) == (q[col] - zp[10]) * 0.5f);
}

TEST_CASE("int-packed with activation ordering: column c takes the scale of group g_idx[c]") {
  Group g = Matrix(Coding::kIntPacked, 1, 4, 1, 2);
  g.bits = 8;
  g.g_idx = {1, 0, 0, 1};
  std::vector<uint32_t> row = Pack({1, 1, 1, 1}, 8);
  std::vector<std::byte> w(4);
  std::memcpy(w.data(), row.data(), 4);
  std::vector<std::byte> s = F32s({2.0f, 3.0f});
  Chunk c{0, 1, w, s, {}, safetensors::Dtype::F32, safetensors::Dtype::I32, 1.0f};
  std::vector<std::byte> out(16);
  DecodeRows(g, c, Target::kFloat32, out);
  CHECK(Floats(out) == std::vector<float>{3, 2, 2, 3});
}

TEST_CASE("E2M1: low nibble first; gpt-oss columns; NVFP4 global scales") {
  Group g = Matrix(Coding::kE2M1, 2, 32, 1, 32);
  g.e8m0_scale = true;
  std::vector<std::byte> w(32, std::byte{0});
  w[0] = std::byte{0x92};   // element 0: code 2 (1.0), element 1: code 9 (-0.5)
  w[16] = std::byte{0x07};  // row 1, element 0: 6.0
  std::vector<std::byte> s = {std::byte{128}, std::byte{126}};  // 2^1, 2^-1
  Chunk c{0, 2, w, s, {}, safetensors::Dtype::U8, safetensors::Dtype::I32, 1.0f};
  CHECK(ValueAt(g, c, 0, 0) == 2.0f);
  CHECK(ValueAt(g, c, 0, 1) == -1.0f);
  CHECK(ValueAt(g, c, 1, 0) == 3.0f);
  CHECK(std::signbit(ValueAt(g, c, 0, 2)) == false);
  std::vector<std::byte> out(2 * 2 * 4);  // columns 0..1, each of the 2 rows
  DecodeColumns(g, c, 0, 2, 2, 0, Target::kFloat32, out);
  CHECK(Floats(out) == std::vector<float>{2, 3, -1, 0});
  // Row 1 alone (a chunk of part of the expert) lands at its place in each column.
  std::vector<std::byte> part(2 * 2 * 4);
  Chunk c1{1, 2, std::span(w).subspan(16), std::span(s).subspan(1), {}, safetensors::Dtype::U8,
           safetensors::Dtype::I32, 1.0f};
  DecodeColumns(g, c1, 0, 2, 2, 0, Target::kFloat32, part);
  CHECK(Floats(part)[1] == 3.0f);
  CHECK(Floats(part)[3] == 0.0f);
  // NVFP4: F8_E4M3 scale 1.5 (0x3C), global 4: x (1.5 x 4) or x (1.5 / 4).
  g.e8m0_scale = false;
  g.block_cols = 16;
  g.scale_cols = 2;
  std::vector<std::byte> s8 = {std::byte{0x3C}, std::byte{0x3C}, std::byte{0x3C}, std::byte{0x3C}};
  Chunk n{0, 2, w, s8, {}, safetensors::Dtype::F8_E4M3, safetensors::Dtype::I32, 4.0f};
  CHECK(ValueAt(g, n, 0, 0) == 6.0f);
  g.global_divides = true;
  CHECK(ValueAt(g, n, 0, 0) == 0.375f);
  CHECK(ValueAt(g, n, 1, 0) == 6.0f * 0.375f);
}

}  // namespace
}  // namespace zerofold::quant
