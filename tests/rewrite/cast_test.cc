#include "torch/cast.h"
#include "rewrite/cast.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "plan/shrink_plan.h"
#include "support/checkpoint_builder.h"
#include "torch/checkpoint.h"

namespace zerofold::torch {
namespace {

// Expected bit patterns: what Debian's python3-torch 1.13 (AVX2 capability)
// returned, once, for `tensor.to(dtype)` of a 1-D contiguous tensor holding
// the left-hand values (and for kF32ToBF16Scalar, of each value as a 0-dim
// tensor): ±0, subnormals, values at rounding ties and just off them, the
// largest finite values, overflow, infinities and NaNs with payloads.
// f32->bf16 vec
constexpr std::pair<uint32_t, uint16_t> kF32ToBF16Vector[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x3F800000, 0x3F80}, {0xBF800000, 0xBF80},
    {0x00000001, 0x0000}, {0x007FFFFF, 0x0080}, {0x00008000, 0x0000}, {0x00018000, 0x0002},
    {0x3F808000, 0x3F80}, {0x3F818000, 0x3F82}, {0x3F808001, 0x3F81}, {0x3F80FFFF, 0x3F81},
    {0x7F7FFFFF, 0x7F80}, {0x7F7F7FFF, 0x7F7F}, {0x7F7F8000, 0x7F80}, {0x7F800000, 0x7F80},
    {0xFF800000, 0xFF80}, {0x7FC00000, 0xFFFF}, {0x7F800001, 0xFFFF}, {0xFFFFFFFF, 0xFFFF},
    {0x477FE000, 0x4780}, {0x477FEFFF, 0x4780}, {0x477FF000, 0x4780}, {0xC77FF000, 0xC780},
    {0x33800000, 0x3380}, {0x33000000, 0x3300}, {0x33000001, 0x3300}, {0x33C00000, 0x33C0},
    {0x38800000, 0x3880}, {0x387FC000, 0x3880}, {0x387FE000, 0x3880}, {0x387FDFFF, 0x3880},
    {0x3F801000, 0x3F80}, {0x3F803000, 0x3F80}, {0x3F801001, 0x3F80}, {0x40490FDB, 0x4049},
    {0xC2F6E979, 0xC2F7}, {0x2F800000, 0x2F80}, {0x33400000, 0x3340}, {0x337FFFFF, 0x3380},
};
// f32->bf16 scalar
constexpr std::pair<uint32_t, uint16_t> kF32ToBF16Scalar[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x3F800000, 0x3F80}, {0xBF800000, 0xBF80},
    {0x00000001, 0x0000}, {0x007FFFFF, 0x0080}, {0x00008000, 0x0000}, {0x00018000, 0x0002},
    {0x3F808000, 0x3F80}, {0x3F818000, 0x3F82}, {0x3F808001, 0x3F81}, {0x3F80FFFF, 0x3F81},
    {0x7F7FFFFF, 0x7F80}, {0x7F7F7FFF, 0x7F7F}, {0x7F7F8000, 0x7F80}, {0x7F800000, 0x7F80},
    {0xFF800000, 0xFF80}, {0x7FC00000, 0x7FC0}, {0x7F800001, 0x7FC0}, {0xFFFFFFFF, 0x7FC0},
    {0x477FE000, 0x4780}, {0x477FEFFF, 0x4780}, {0x477FF000, 0x4780}, {0xC77FF000, 0xC780},
    {0x33800000, 0x3380}, {0x33000000, 0x3300}, {0x33000001, 0x3300}, {0x33C00000, 0x33C0},
    {0x38800000, 0x3880}, {0x387FC000, 0x3880}, {0x387FE000, 0x3880}, {0x387FDFFF, 0x3880},
    {0x3F801000, 0x3F80}, {0x3F803000, 0x3F80}, {0x3F801001, 0x3F80}, {0x40490FDB, 0x4049},
    {0xC2F6E979, 0xC2F7}, {0x2F800000, 0x2F80}, {0x33400000, 0x3340}, {0x337FFFFF, 0x3380},
};
// f32->f16
constexpr std::pair<uint32_t, uint16_t> kF32ToF16[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x3F800000, 0x3C00}, {0xBF800000, 0xBC00},
    {0x00000001, 0x0000}, {0x007FFFFF, 0x0000}, {0x00008000, 0x0000}, {0x00018000, 0x0000},
    {0x3F808000, 0x3C04}, {0x3F818000, 0x3C0C}, {0x3F808001, 0x3C04}, {0x3F80FFFF, 0x3C08},
    {0x7F7FFFFF, 0x7C00}, {0x7F7F7FFF, 0x7C00}, {0x7F7F8000, 0x7C00}, {0x7F800000, 0x7C00},
    {0xFF800000, 0xFC00}, {0x7FC00000, 0x7E00}, {0x7F800001, 0x7E00}, {0xFFFFFFFF, 0xFE00},
    {0x477FE000, 0x7BFF}, {0x477FEFFF, 0x7BFF}, {0x477FF000, 0x7C00}, {0xC77FF000, 0xFC00},
    {0x33800000, 0x0001}, {0x33000000, 0x0000}, {0x33000001, 0x0001}, {0x33C00000, 0x0002},
    {0x38800000, 0x0400}, {0x387FC000, 0x03FF}, {0x387FE000, 0x0400}, {0x387FDFFF, 0x03FF},
    {0x3F801000, 0x3C00}, {0x3F803000, 0x3C02}, {0x3F801001, 0x3C01}, {0x40490FDB, 0x4248},
    {0xC2F6E979, 0xD7B7}, {0x2F800000, 0x0000}, {0x33400000, 0x0001}, {0x337FFFFF, 0x0001},
};
// f32->f64
constexpr std::pair<uint32_t, uint64_t> kF32ToF64[] = {
    {0x00000000, 0x0000000000000000}, {0x80000000, 0x8000000000000000}, {0x3F800000, 0x3FF0000000000000},
    {0xBF800000, 0xBFF0000000000000}, {0x00000001, 0x36A0000000000000}, {0x007FFFFF, 0x380FFFFFC0000000},
    {0x00008000, 0x3790000000000000}, {0x00018000, 0x37A8000000000000}, {0x3F808000, 0x3FF0100000000000},
    {0x3F818000, 0x3FF0300000000000}, {0x3F808001, 0x3FF0100020000000}, {0x3F80FFFF, 0x3FF01FFFE0000000},
    {0x7F7FFFFF, 0x47EFFFFFE0000000}, {0x7F7F7FFF, 0x47EFEFFFE0000000}, {0x7F7F8000, 0x47EFF00000000000},
    {0x7F800000, 0x7FF0000000000000}, {0xFF800000, 0xFFF0000000000000}, {0x7FC00000, 0x7FF8000000000000},
    {0x7F800001, 0x7FF8000020000000}, {0xFFFFFFFF, 0xFFFFFFFFE0000000}, {0x477FE000, 0x40EFFC0000000000},
    {0x477FEFFF, 0x40EFFDFFE0000000}, {0x477FF000, 0x40EFFE0000000000}, {0xC77FF000, 0xC0EFFE0000000000},
    {0x33800000, 0x3E70000000000000}, {0x33000000, 0x3E60000000000000}, {0x33000001, 0x3E60000020000000},
    {0x33C00000, 0x3E78000000000000}, {0x38800000, 0x3F10000000000000}, {0x387FC000, 0x3F0FF80000000000},
    {0x387FE000, 0x3F0FFC0000000000}, {0x387FDFFF, 0x3F0FFBFFE0000000}, {0x3F801000, 0x3FF0020000000000},
    {0x3F803000, 0x3FF0060000000000}, {0x3F801001, 0x3FF0020020000000}, {0x40490FDB, 0x400921FB60000000},
    {0xC2F6E979, 0xC05EDD2F20000000}, {0x2F800000, 0x3DF0000000000000}, {0x33400000, 0x3E68000000000000},
    {0x337FFFFF, 0x3E6FFFFFE0000000},
};
// f64->f32
constexpr std::pair<uint64_t, uint32_t> kF64ToF32[] = {
    {0x0000000000000000, 0x00000000}, {0x8000000000000000, 0x80000000}, {0x3FF0000000000000, 0x3F800000},
    {0x3FF0020000400000, 0x3F801000}, {0x3FF0000010000000, 0x3F800000}, {0x3FF0000010000001, 0x3F800001},
    {0x7FEFFFFFFFFFFFFF, 0x7F800000}, {0x47EFFFFFE0000000, 0x7F7FFFFF}, {0x47EFFFFFEFFFFFFF, 0x7F7FFFFF},
    {0x36A0000000000000, 0x00000001}, {0x3690000000000000, 0x00000000}, {0x0000000000000001, 0x00000000},
    {0x7FF0000000000000, 0x7F800000}, {0xFFF0000000000000, 0xFF800000}, {0x7FF8000000000000, 0x7FC00000},
    {0x7FF0000000000001, 0x7FC00000}, {0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF}, {0x7FF0000020000000, 0x7FC00001},
    {0x3FF0020000400000, 0x3F801000}, {0x3FF0100000400000, 0x3F808000}, {0x40EFFDFFAE147AE1, 0x477FEFFD},
    {0x37A16C262777579C, 0x000116C2},
};
// f64->f16
constexpr std::pair<uint64_t, uint16_t> kF64ToF16[] = {
    {0x0000000000000000, 0x0000}, {0x8000000000000000, 0x8000}, {0x3FF0000000000000, 0x3C00},
    {0x3FF0020000400000, 0x3C00}, {0x3FF0000010000000, 0x3C00}, {0x3FF0000010000001, 0x3C00},
    {0x7FEFFFFFFFFFFFFF, 0x7C00}, {0x47EFFFFFE0000000, 0x7C00}, {0x47EFFFFFEFFFFFFF, 0x7C00},
    {0x36A0000000000000, 0x0000}, {0x3690000000000000, 0x0000}, {0x0000000000000001, 0x0000},
    {0x7FF0000000000000, 0x7C00}, {0xFFF0000000000000, 0xFC00}, {0x7FF8000000000000, 0x7E00},
    {0x7FF0000000000001, 0x7E00}, {0xFFFFFFFFFFFFFFFF, 0xFE00}, {0x7FF0000020000000, 0x7E00},
    {0x3FF0020000400000, 0x3C00}, {0x3FF0100000400000, 0x3C04}, {0x40EFFDFFAE147AE1, 0x7BFF},
    {0x37A16C262777579C, 0x0000},
};
// f16->f32
constexpr std::pair<uint16_t, uint32_t> kF16ToF32[] = {
    {0x0000, 0x00000000}, {0x8000, 0x80000000}, {0x0001, 0x33800000}, {0x03FF, 0x387FC000},
    {0x0400, 0x38800000}, {0x3C00, 0x3F800000}, {0x7BFF, 0x477FE000}, {0x7C00, 0x7F800000},
    {0xFC00, 0xFF800000}, {0x7E00, 0x7FC00000}, {0x7C01, 0x7FC02000}, {0x7FFF, 0x7FFFE000},
    {0xFE00, 0xFFC00000}, {0x3555, 0x3EAAA000}, {0x8001, 0xB3800000}, {0x3C01, 0x3F802000},
    {0x3C03, 0x3F806000}, {0x3C07, 0x3F80E000},
};
// f16->bf16
constexpr std::pair<uint16_t, uint16_t> kF16ToBF16[] = {
    {0x0000, 0x0000}, {0x8000, 0x8000}, {0x0001, 0x3380}, {0x03FF, 0x3880}, {0x0400, 0x3880},
    {0x3C00, 0x3F80}, {0x7BFF, 0x4780}, {0x7C00, 0x7F80}, {0xFC00, 0xFF80}, {0x7E00, 0x7FC0},
    {0x7C01, 0x7FC0}, {0x7FFF, 0x7FC0}, {0xFE00, 0x7FC0}, {0x3555, 0x3EAB}, {0x8001, 0xB380},
    {0x3C01, 0x3F80}, {0x3C03, 0x3F80}, {0x3C07, 0x3F81},
};
// f16->f64
constexpr std::pair<uint16_t, uint64_t> kF16ToF64[] = {
    {0x0000, 0x0000000000000000}, {0x8000, 0x8000000000000000}, {0x0001, 0x3E70000000000000},
    {0x03FF, 0x3F0FF80000000000}, {0x0400, 0x3F10000000000000}, {0x3C00, 0x3FF0000000000000},
    {0x7BFF, 0x40EFFC0000000000}, {0x7C00, 0x7FF0000000000000}, {0xFC00, 0xFFF0000000000000},
    {0x7E00, 0x7FF8000000000000}, {0x7C01, 0x7FF8040000000000}, {0x7FFF, 0x7FFFFC0000000000},
    {0xFE00, 0xFFF8000000000000}, {0x3555, 0x3FD5540000000000}, {0x8001, 0xBE70000000000000},
    {0x3C01, 0x3FF0040000000000}, {0x3C03, 0x3FF00C0000000000}, {0x3C07, 0x3FF01C0000000000},
};
// bf16->f32
constexpr std::pair<uint16_t, uint32_t> kBF16ToF32[] = {
    {0x0000, 0x00000000}, {0x8000, 0x80000000}, {0x0001, 0x00010000}, {0x007F, 0x007F0000},
    {0x0080, 0x00800000}, {0x3F80, 0x3F800000}, {0x7F7F, 0x7F7F0000}, {0x7F80, 0x7F800000},
    {0xFF80, 0xFF800000}, {0x7FC0, 0x7FC00000}, {0x7F81, 0x7F810000}, {0x7FFF, 0x7FFF0000},
    {0xFFC0, 0xFFC00000}, {0x3F81, 0x3F810000}, {0x477F, 0x477F0000}, {0x4780, 0x47800000},
    {0x3380, 0x33800000}, {0x3300, 0x33000000}, {0x3340, 0x33400000}, {0xC77F, 0xC77F0000},
};
// bf16->f16
constexpr std::pair<uint16_t, uint16_t> kBF16ToF16[] = {
    {0x0000, 0x0000}, {0x8000, 0x8000}, {0x0001, 0x0000}, {0x007F, 0x0000}, {0x0080, 0x0000},
    {0x3F80, 0x3C00}, {0x7F7F, 0x7C00}, {0x7F80, 0x7C00}, {0xFF80, 0xFC00}, {0x7FC0, 0x7E00},
    {0x7F81, 0x7E00}, {0x7FFF, 0x7E00}, {0xFFC0, 0xFE00}, {0x3F81, 0x3C08}, {0x477F, 0x7BF8},
    {0x4780, 0x7C00}, {0x3380, 0x0001}, {0x3300, 0x0000}, {0x3340, 0x0001}, {0xC77F, 0xFBF8},
};
// bf16->f64
constexpr std::pair<uint16_t, uint64_t> kBF16ToF64[] = {
    {0x0000, 0x0000000000000000}, {0x8000, 0x8000000000000000}, {0x0001, 0x37A0000000000000},
    {0x007F, 0x380FC00000000000}, {0x0080, 0x3810000000000000}, {0x3F80, 0x3FF0000000000000},
    {0x7F7F, 0x47EFE00000000000}, {0x7F80, 0x7FF0000000000000}, {0xFF80, 0xFFF0000000000000},
    {0x7FC0, 0x7FF8000000000000}, {0x7F81, 0x7FF8200000000000}, {0x7FFF, 0x7FFFE00000000000},
    {0xFFC0, 0xFFF8000000000000}, {0x3F81, 0x3FF0200000000000}, {0x477F, 0x40EFE00000000000},
    {0x4780, 0x40F0000000000000}, {0x3380, 0x3E70000000000000}, {0x3300, 0x3E60000000000000},
    {0x3340, 0x3E68000000000000}, {0xC77F, 0xC0EFE00000000000},
};
// f64->bf16 (first 16: torch's vectorized part)
constexpr std::pair<uint64_t, uint16_t> kF64ToBF16Vector[] = {
    {0x0000000000000000, 0x0000},
    {0x8000000000000000, 0x8000},
    {0x3FF0000000000000, 0x3F80},
    {0x3FF0020000400000, 0x3F80},
    {0x3FF0000010000000, 0x3F80},
    {0x3FF0000010000001, 0x3F80},
    {0x7FEFFFFFFFFFFFFF, 0x7F80},
    {0x47EFFFFFE0000000, 0x7F80},
    {0x47EFFFFFEFFFFFFF, 0x7F80},
    {0x36A0000000000000, 0x0000},
    {0x3690000000000000, 0x0000},
    {0x0000000000000001, 0x0000},
    {0x7FF0000000000000, 0x7F80},
    {0xFFF0000000000000, 0xFF80},
    {0x7FF8000000000000, 0xFFFF},
    {0x7FF0000000000001, 0xFFFF},
};

// f64->bf16 of all 22 values as one contiguous tensor: torch's vector loop
// takes the first 16, its scalar tail the last 6 (NaNs 0xFFFF, then 0x7FC0).
constexpr std::pair<uint64_t, uint16_t> kF64ToBF16Whole[] = {
    {0x0000000000000000, 0x0000},
    {0x8000000000000000, 0x8000},
    {0x3FF0000000000000, 0x3F80},
    {0x3FF0020000400000, 0x3F80},
    {0x3FF0000010000000, 0x3F80},
    {0x3FF0000010000001, 0x3F80},
    {0x7FEFFFFFFFFFFFFF, 0x7F80},
    {0x47EFFFFFE0000000, 0x7F80},
    {0x47EFFFFFEFFFFFFF, 0x7F80},
    {0x36A0000000000000, 0x0000},
    {0x3690000000000000, 0x0000},
    {0x0000000000000001, 0x0000},
    {0x7FF0000000000000, 0x7F80},
    {0xFFF0000000000000, 0xFF80},
    {0x7FF8000000000000, 0xFFFF},
    {0x7FF0000000000001, 0xFFFF},
    {0xFFFFFFFFFFFFFFFF, 0x7FC0},
    {0x7FF0000020000000, 0x7FC0},
    {0x3FF0020000400000, 0x3F80},
    {0x3FF0100000400000, 0x3F80},
    {0x40EFFDFFAE147AE1, 0x4780},
    {0x37A16C262777579C, 0x0001},
};

template <typename In, typename Out, size_t N, typename Fn>
void CheckTable(const char* name, const std::pair<In, Out> (&table)[N], Fn fn) {
  for (const auto& row : table) {
    // Plain references: clang 14 cannot capture structured bindings (CAPTURE).
    const In& in = row.first;
    const Out& want = row.second;
    CAPTURE(name);
    CAPTURE(in);
    CHECK_EQ(fn(in), want);
  }
}

TEST_CASE("element conversions give torch's bits") {
  CheckTable("f32->bf16 vector", kF32ToBF16Vector, [](uint32_t v) { return Float32ToBFloat16(v, BFloat16Nan::kVector); });
  CheckTable("f32->bf16 scalar", kF32ToBF16Scalar, [](uint32_t v) { return Float32ToBFloat16(v, BFloat16Nan::kScalar); });
  CheckTable("f32->f16", kF32ToF16, Float32ToFloat16);
  CheckTable("f32->f64", kF32ToF64, Float32ToFloat64);
  CheckTable("f64->f32", kF64ToF32, Float64ToFloat32);
  CheckTable("f64->f16", kF64ToF16, [](uint64_t v) { return Float32ToFloat16(Float64ToFloat32(v)); });
  CheckTable("f64->bf16", kF64ToBF16Vector,
             [](uint64_t v) { return Float32ToBFloat16(Float64ToFloat32(v), BFloat16Nan::kVector); });
  CheckTable("f16->f32", kF16ToF32, Float16ToFloat32);
  CheckTable("bf16->f32", kBF16ToF32, BFloat16ToFloat32);
}

// Packs values as little-endian elements of `width` bytes.
template <typename T>
std::vector<std::byte> Pack(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (sizeof(T) == 2) io::EncodeU16le(out.data() + 2 * i, values[i]);
    if constexpr (sizeof(T) == 4) io::EncodeU32le(out.data() + 4 * i, values[i]);
    if constexpr (sizeof(T) == 8) io::EncodeU64le(out.data() + 8 * i, values[i]);
  }
  return out;
}

template <typename In, typename Out, size_t N>
void CheckCast(DType from, DType to, const std::pair<In, Out> (&table)[N], BFloat16Nan nan = BFloat16Nan::kVector) {
  std::vector<In> in;
  std::vector<Out> want;
  for (const auto& [a, b] : table) {
    in.push_back(a);
    want.push_back(b);
  }
  std::vector<std::byte> src = Pack(in);
  std::vector<std::byte> dst(N * sizeof(Out));
  Status s = CastElements(from, to, src, dst, NanRule{nan, UINT64_MAX});
  REQUIRE(s.ok());
  CAPTURE(Info(from).name);
  CAPTURE(Info(to).name);
  CHECK(dst == Pack(want));
}

TEST_CASE("CastElements converts buffers for every pair torch's rounding was measured on") {
  CheckCast(DType::kFloat32, DType::kBFloat16, kF32ToBF16Vector);
  CheckCast(DType::kFloat32, DType::kBFloat16, kF32ToBF16Scalar, BFloat16Nan::kScalar);
  CheckCast(DType::kFloat32, DType::kFloat16, kF32ToF16);
  CheckCast(DType::kFloat32, DType::kFloat64, kF32ToF64);
  CheckCast(DType::kFloat64, DType::kFloat32, kF64ToF32);
  CheckCast(DType::kFloat64, DType::kFloat16, kF64ToF16);
  CheckCast(DType::kFloat64, DType::kBFloat16, kF64ToBF16Vector);
  CheckCast(DType::kFloat16, DType::kFloat32, kF16ToF32);
  CheckCast(DType::kFloat16, DType::kFloat64, kF16ToF64);
  // float16 -> bfloat16 takes torch's scalar path whatever the layout.
  CheckCast(DType::kFloat16, DType::kBFloat16, kF16ToBF16, BFloat16Nan::kVector);
  CheckCast(DType::kBFloat16, DType::kFloat32, kBF16ToF32);
  CheckCast(DType::kBFloat16, DType::kFloat16, kBF16ToF16);
  CheckCast(DType::kBFloat16, DType::kFloat64, kBF16ToF64);
}

TEST_CASE("float64 -> bfloat16 NaNs in the tail of torch's loop come out 0x7FC0") {
  std::vector<uint64_t> in;
  std::vector<uint16_t> want;
  for (const auto& [a, b] : kF64ToBF16Whole) {
    in.push_back(a);
    want.push_back(b);
  }
  const std::vector<int64_t> shape = {static_cast<int64_t>(in.size())}, stride = {1};
  const NanRule rule = TorchNanRule(shape, stride);
  CHECK_EQ(rule.nan, BFloat16Nan::kVector);
  CHECK_EQ(rule.f64_vector_end, 16u);
  std::vector<std::byte> src = Pack(in), dst(in.size() * 2);
  REQUIRE(CastElements(DType::kFloat64, DType::kBFloat16, src, dst, rule).ok());
  CHECK(dst == Pack(want));
  // The same in two chunks, the second starting at element 10.
  std::vector<std::byte> a(20), b(24);
  REQUIRE(CastElements(DType::kFloat64, DType::kBFloat16, std::span(src).first(80), a, rule, 0).ok());
  REQUIRE(CastElements(DType::kFloat64, DType::kBFloat16, std::span(src).subspan(80), b, rule, 10).ok());
  a.insert(a.end(), b.begin(), b.end());
  CHECK(a == Pack(want));
}

TEST_CASE("TorchNanRule: the float64 tail is modeled for C-contiguous views only") {
  auto end = [](std::vector<int64_t> shape, std::vector<int64_t> stride) {
    return TorchNanRule(shape, stride).f64_vector_end;
  };
  CHECK_EQ(end({9}, {1}), 0u);
  CHECK_EQ(end({40}, {1}), 32u);
  CHECK_EQ(end({4, 8}, {8, 1}), 32u);
  CHECK_EQ(end({3, 1, 7}, {7, 99, 1}), 16u);
  CHECK_EQ(end({8, 8}, {1, 8}), UINT64_MAX);  // transposed
  CHECK_EQ(end({32}, {2}), UINT64_MAX);
  CHECK_EQ(TorchNanRule(std::vector<int64_t>{}, std::vector<int64_t>{}).nan, BFloat16Nan::kScalar);
}

TEST_CASE("float16 -> float32 -> float16 is the identity on every non-NaN value") {
  int checked = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan) continue;
    CAPTURE(h);
    CHECK_EQ(Float32ToFloat16(Float16ToFloat32(static_cast<uint16_t>(h))), h);
    ++checked;
  }
  CHECK_EQ(checked, 65536 - 2 * 1023);
}

TEST_CASE("CastElements refuses what it cannot convert") {
  std::vector<std::byte> src(8), dst(4);
  Status s = CastElements(DType::kInt32, DType::kFloat32, src, std::span<std::byte>(src.data(), 8), NanRule{});
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "cannot cast int32 to float32");
  s = CastElements(DType::kFloat32, DType::kFloat16, std::span<const std::byte>(src.data(), 6), dst, NanRule{});
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "cast of 6 bytes of float32 into 4 bytes of float16");
  s = CastElements(DType::kFloat32, DType::kFloat16, src, std::span<std::byte>(dst.data(), 2), NanRule{});
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK(IsCastable(DType::kBFloat16));
  CHECK_FALSE(IsCastable(DType::kFloat8E4M3FN));
  CHECK_FALSE(IsCastable(DType::kComplex64));
}

// Which NaN torch 1.13 writes for float32 -> bfloat16, by layout: measured
// with as_strided views of an all-NaN buffer (the model in TorchBFloat16Nan
// agreed with torch on 3000 random layouts).
struct NanCase {
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  BFloat16Nan want;
};

TEST_CASE("TorchBFloat16Nan follows torch's choice of loop") {
  const NanCase cases[] = {
      {{}, {}, BFloat16Nan::kScalar},                          // 0-dim
      {{1}, {7}, BFloat16Nan::kVector},                        // one element
      {{1, 1}, {5, 7}, BFloat16Nan::kVector},
      {{40}, {1}, BFloat16Nan::kVector},                       // contiguous
      {{32}, {2}, BFloat16Nan::kScalar},                       // every other element
      {{40}, {0}, BFloat16Nan::kScalar},                       // expanded
      {{8}, {8}, BFloat16Nan::kScalar},                        // a column
      {{8, 8}, {1, 8}, BFloat16Nan::kVector},                  // transposed (dense)
      {{8, 3}, {8, 1}, BFloat16Nan::kVector},                  // narrowed rows
      {{5, 4}, {1, 10}, BFloat16Nan::kVector},                 // not dense, inner stride 1 in input order
      {{2, 3, 4}, {24, 1, 6}, BFloat16Nan::kVector},
      {{2, 3, 4}, {12, 1, 3}, BFloat16Nan::kVector},
      {{3, 2}, {2, 0}, BFloat16Nan::kScalar},
      {{3, 2}, {0, 1}, BFloat16Nan::kVector},
      {{4, 5, 1}, {1, 4, 7}, BFloat16Nan::kVector},
  };
  for (const NanCase& c : cases) {
    CAPTURE(ShapeText(c.shape));
    CAPTURE(ShapeText(c.stride));
    CHECK_EQ(TorchBFloat16Nan(c.shape, c.stride), c.want);
  }
}

}  // namespace
}  // namespace zerofold::torch

namespace zerofold::rewrite {
namespace {

using torch::DType;

TEST_CASE("--dtype targets and what each dtype becomes") {
  CHECK_EQ(rewrite::ParseCastTarget("bfloat16"), DType::kBFloat16);
  CHECK_EQ(rewrite::ParseCastTarget("float16"), DType::kFloat16);
  CHECK_EQ(rewrite::ParseCastTarget("float32"), DType::kFloat32);
  CHECK_FALSE(rewrite::ParseCastTarget("float64"));
  // The short names users type.
  CHECK_EQ(rewrite::ParseCastTarget("bf16"), DType::kBFloat16);
  CHECK_EQ(rewrite::ParseCastTarget("fp16"), DType::kFloat16);
  CHECK_EQ(rewrite::ParseCastTarget("half"), DType::kFloat16);
  CHECK_EQ(rewrite::ParseCastTarget("fp32"), DType::kFloat32);
  CHECK_EQ(rewrite::ParseCastTarget("float"), DType::kFloat32);
  for (const char* bad : {"", "BF16", "fp64", "double", "bfloat", "torch.float16", "f16", "halff"}) {
    CAPTURE(bad);
    CHECK_FALSE(rewrite::ParseCastTarget(bad));
  }
  CHECK_EQ(rewrite::OutputDType(DType::kFloat64, DType::kBFloat16).value(), DType::kBFloat16);
  CHECK_EQ(rewrite::OutputDType(DType::kFloat32, std::nullopt).value(), DType::kFloat32);
  CHECK_EQ(rewrite::OutputDType(DType::kInt64, DType::kFloat16).value(), DType::kInt64);
  CHECK_EQ(rewrite::OutputDType(DType::kBool, DType::kFloat16).value(), DType::kBool);
  CHECK_EQ(rewrite::OutputDType(DType::kComplex64, DType::kFloat16).value(), DType::kComplex64);
  CHECK_EQ(rewrite::OutputDType(DType::kQInt8, DType::kFloat16).value(), DType::kQInt8);
  Result<DType> f8 = rewrite::OutputDType(DType::kFloat8E4M3FN, DType::kFloat32);
  CHECK_EQ(f8.status().code(), Code::kUnsupported);
  CHECK_EQ(f8.status().message(), "--dtype float32 cannot convert float8_e4m3fn tensors");
}

TEST_CASE("each output storage is cast once, at its views' dtype") {
  // Storage 0: a float32 buffer with two disjoint views (two output
  // storages); storage 1: int64; storage 2: a float32 view and its
  // transpose (one output storage, NaN rule of the first view).
  torch::Checkpoint ckpt = testing::BuildCheckpoint(
      {400, 80, 64}, {{"a", 0, DType::kFloat32, {10}, {1}, 0},
                      {"b", 0, DType::kFloat32, {5}, {2}, 50},
                      {"i", 1, DType::kInt64, {10}, {1}, 0},
                      {"m", 2, DType::kFloat32, {4, 4}, {4, 1}, 0},
                      {"mt", 2, DType::kFloat32, {4, 4}, {1, 4}, 0}});
  ckpt.storages[1].dtype = DType::kInt64;
  plan::ShrinkPlan plan = plan::PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 4u);
  std::vector<rewrite::StorageCast> casts = rewrite::PlanStorageCasts(ckpt, plan, DType::kBFloat16).value();
  REQUIRE_EQ(casts.size(), 4u);
  const rewrite::StorageCast& a = casts[plan.views[0].output_storage];
  CHECK(a.cast());
  CHECK_EQ(a.out_nbytes, 20u);
  CHECK_EQ(a.nan.f64_vector_end, 0u);  // C-contiguous, 10 elements: all in the tail
  const rewrite::StorageCast& b = casts[plan.views[1].output_storage];
  CHECK_EQ(b.out_nbytes, 18u);  // 9 elements spanned by a stride-2 view of 5
  CHECK_EQ(b.nan.nan, torch::BFloat16Nan::kScalar);
  const rewrite::StorageCast& i = casts[plan.views[2].output_storage];
  CHECK_FALSE(i.cast());
  CHECK_EQ(i.out_nbytes, 80u);
  const rewrite::StorageCast& m = casts[plan.views[3].output_storage];
  CHECK_EQ(plan.views[3].output_storage, plan.views[4].output_storage);
  CHECK_EQ(m.out_nbytes, 32u);
  CHECK_EQ(m.nan.f64_vector_end, UINT64_MAX);  // two different views share it
  // No target: nothing is cast.
  std::vector<rewrite::StorageCast> none = rewrite::PlanStorageCasts(ckpt, plan, std::nullopt).value();
  for (const rewrite::StorageCast& c : none) CHECK_FALSE(c.cast());
}

TEST_CASE("a storage viewed as two dtypes cannot be cast") {
  torch::Checkpoint ckpt = testing::BuildCheckpoint(
      {16}, {{"f", 0, DType::kFloat32, {4}, {1}, 0}, {"i", 0, DType::kInt32, {4}, {1}, 0}});
  ckpt.storages[0].untyped = true;
  plan::ShrinkPlan plan = plan::PlanShrink(ckpt).value();
  Result<std::vector<rewrite::StorageCast>> r = rewrite::PlanStorageCasts(ckpt, plan, DType::kFloat16);
  CHECK_EQ(r.status().code(), Code::kUnsupported);
  CHECK_EQ(r.status().record(), "i");
  CHECK(rewrite::PlanStorageCasts(ckpt, plan, std::nullopt).ok());
}

TEST_CASE("CastCopier emits a byte range cast in whole elements") {
  std::vector<std::byte> file(4 + 4 * 300);
  for (uint32_t k = 0; k < 300; ++k) io::EncodeU32le(file.data() + 4 + 4 * k, torch::Float16ToFloat32(static_cast<uint16_t>(k * 7)));
  io::MemSource src("mem", file);
  rewrite::CastCopier copier(64);
  rewrite::StorageCast c{DType::kFloat32, DType::kFloat16, {}, 600};
  std::vector<std::byte> out;
  size_t chunks = 0;
  REQUIRE(copier.Copy(src, 4, 1200, c, "rec", [&](std::span<const std::byte> b) {
    out.insert(out.end(), b.begin(), b.end());
    ++chunks;
    return Status::OK();
  }).ok());
  REQUIRE_EQ(out.size(), 600u);
  for (uint32_t k = 0; k < 300; ++k) CHECK_EQ(io::DecodeU16le(out.data() + 2 * k), static_cast<uint16_t>(k * 7));
  CHECK_EQ(chunks, 19u);  // 64-byte reads of 16 float32
  Status s = copier.Copy(src, 1000, 400, c, "rec", [](std::span<const std::byte>) { return Status::OK(); });
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "rec");
  CHECK_EQ(s.path(), "mem");
}

}  // namespace
}  // namespace zerofold::rewrite
