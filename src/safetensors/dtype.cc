#include "safetensors/dtype.h"

#include <array>
#include <cstdint>
#include <utility>

#include "io/checked_math.h"

namespace zerofold::safetensors {

namespace {

// Indexed by Dtype; order and bit widths from tensor.rs `Dtype` and
// `Dtype::bitsize`.
constexpr std::array<DtypeInfo, kDtypeCount> kDtypes = {{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},
    {Dtype::C64, "C64", 64},
    {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
}};

}  // namespace

const DtypeInfo& Info(Dtype dtype) { return kDtypes[static_cast<size_t>(dtype)]; }

std::optional<Dtype> ParseDtype(std::string_view code) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.code == code) return info.dtype;
  }
  return std::nullopt;
}

// torch's dtype table (torch/dtype.cc) holds the safetensors code of each
// torch dtype; both directions go through it so the two never disagree.
std::optional<torch::DType> ToTorch(Dtype dtype) {
  return torch::FromSafetensors(DtypeCode(dtype));
}

std::optional<Dtype> FromTorch(torch::DType dtype) {
  return ParseDtype(torch::Info(dtype).safetensors);
}

std::optional<std::vector<int64_t>> TorchShape(Dtype dtype, std::span<const uint64_t> shape) {
  if (!ToTorch(dtype)) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (uint64_t d : shape) {
    if (!std::in_range<int64_t>(d)) return std::nullopt;
    out.push_back(static_cast<int64_t>(d));
  }
  if (dtype == Dtype::F4) {
    if (out.empty() || out.back() % 2 != 0) return std::nullopt;
    out.back() /= 2;
  }
  return out;
}

std::optional<std::vector<uint64_t>> ShapeFromTorch(Dtype dtype, std::span<const int64_t> shape) {
  std::vector<uint64_t> out;
  out.reserve(shape.size());
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    out.push_back(static_cast<uint64_t>(d));
  }
  if (dtype == Dtype::F4) {
    if (out.empty() || out.back() > static_cast<uint64_t>(INT64_MAX) / 2) return std::nullopt;
    out.back() *= 2;
  }
  return out;
}

std::string NoShapeReason(Dtype dtype, std::span<const int64_t> shape) {
  for (int64_t d : shape)
    if (d < 0) return "negative dimension " + std::to_string(d);
  if (dtype == Dtype::F4 && shape.empty())
    return "a float4_e2m1fn_x2 scalar has no safetensors shape: one byte holds two F4 values";
  return "a float4_e2m1fn_x2 dimension doubled to count F4 values is past 2^63 - 1";
}

ByteSize TensorByteSize(Dtype dtype, std::span<const uint64_t> shape) {
  uint64_t elements = 1;
  for (uint64_t dim : shape) {
    std::optional<uint64_t> next = io::CheckedMul(elements, dim);
    if (!next) return {SizeProblem::kOverflow, 0};
    elements = *next;
  }
  std::optional<uint64_t> bits = io::CheckedMul<uint64_t>(elements, Info(dtype).bits);
  if (!bits) return {SizeProblem::kOverflow, 0};
  if (*bits % 8 != 0) return {SizeProblem::kMisaligned, 0};
  return {SizeProblem::kNone, *bits / 8};
}

}  // namespace zerofold::safetensors
