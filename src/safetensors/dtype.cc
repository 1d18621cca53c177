#include "safetensors/dtype.h"

#include <array>

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

// The safetensors <-> torch pairs. This is a local table over the torch::DType
// enum (torch/dtype.h) so that this folder does not depend on torch's dtype
// table being linked; torch::Info(d).safetensors must agree with it, which
// tests/safetensors/dtype_test.cc can check once both are built together.
struct TorchPair {
  Dtype dtype;
  torch::DType torch;
};
constexpr TorchPair kTorchPairs[] = {
    {Dtype::BOOL, torch::DType::kBool},
    {Dtype::U8, torch::DType::kUInt8},
    {Dtype::I8, torch::DType::kInt8},
    {Dtype::F8_E5M2, torch::DType::kFloat8E5M2},
    {Dtype::F8_E4M3, torch::DType::kFloat8E4M3FN},
    {Dtype::I16, torch::DType::kInt16},
    {Dtype::U16, torch::DType::kUInt16},
    {Dtype::F16, torch::DType::kFloat16},
    {Dtype::BF16, torch::DType::kBFloat16},
    {Dtype::I32, torch::DType::kInt32},
    {Dtype::U32, torch::DType::kUInt32},
    {Dtype::F32, torch::DType::kFloat32},
    {Dtype::C64, torch::DType::kComplex64},
    {Dtype::F64, torch::DType::kFloat64},
    {Dtype::I64, torch::DType::kInt64},
    {Dtype::U64, torch::DType::kUInt64},
};

}  // namespace

const DtypeInfo& Info(Dtype dtype) { return kDtypes[static_cast<size_t>(dtype)]; }

std::optional<Dtype> ParseDtype(std::string_view code) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.code == code) return info.dtype;
  }
  return std::nullopt;
}

std::optional<torch::DType> ToTorch(Dtype dtype) {
  for (const TorchPair& p : kTorchPairs) {
    if (p.dtype == dtype) return p.torch;
  }
  return std::nullopt;
}

std::optional<Dtype> FromTorch(torch::DType dtype) {
  for (const TorchPair& p : kTorchPairs) {
    if (p.torch == dtype) return p.dtype;
  }
  return std::nullopt;
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
