// The safetensors element types: codes, bit widths, the writer's sort order,
// and the mapping to torch dtypes.
//
// Dtype lists the reference's `Dtype` enum (safetensors/src/tensor.rs) in its
// declaration order, which is "increasing alignment" and which the reference
// writer sorts by, descending. Codes ("F32") are the JSON spelling and never
// change. F4 and F6_* are narrower than a byte; their tensors must hold a
// whole number of bytes.
#ifndef ZEROFOLD_SAFETENSORS_DTYPE_H_
#define ZEROFOLD_SAFETENSORS_DTYPE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "torch/dtype.h"

namespace zerofold::safetensors {

// Names are the format's codes, as pickle opcodes keep pickletools names.
enum class Dtype : uint8_t {
  BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0,
  F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64,
};
constexpr size_t kDtypeCount = static_cast<size_t>(Dtype::U64) + 1;

struct DtypeInfo {
  Dtype dtype;
  std::string_view code;  // "F32"
  uint32_t bits;          // bits per element (tensor.rs Dtype::bitsize)
};

const DtypeInfo& Info(Dtype dtype);
inline std::string_view DtypeCode(Dtype dtype) { return Info(dtype).code; }
// From the JSON code; case-sensitive, as serde matches variant names.
std::optional<Dtype> ParseDtype(std::string_view code);

// The torch dtype safetensors' own torch binding gives a code
// (bindings/python/src/lib.rs get_pydtype, parse_dtype_str), from torch's
// dtype table (torch::FromSafetensors), or nullopt where torch has none:
// F6_E2M3, F6_E3M2. F8_E4M3 is float8_e4m3fn, F8_E5M2 float8_e5m2,
// F8_E4M3FNUZ/F8_E5M2FNUZ float8_e4m3fnuz/float8_e5m2fnuz, F8_E8M0
// float8_e8m0fnu, C64 complex64, and F4 float4_e2m1fn_x2, whose elements
// are bytes holding two F4 values: see TorchShape.
std::optional<torch::DType> ToTorch(Dtype dtype);
// The safetensors dtype for a torch dtype, or nullopt (complex32/128,
// quantized and bits types).
std::optional<Dtype> FromTorch(torch::DType dtype);

// The shape torch gives a tensor of `dtype` and safetensors shape `shape`:
// the same, except F4, whose last dimension counts 4-bit values where
// float4_e2m1fn_x2 counts bytes: halved (lib.rs torch_storage_shape).
// nullopt where torch has no dtype, for F4 of rank 0 or with an odd last
// dimension (lib.rs: "f4_x2 dtype requires the last dim be divisible by 2
// in torch"), and for a dimension past 2^63 - 1.
std::optional<std::vector<int64_t>> TorchShape(Dtype dtype, std::span<const uint64_t> shape);
// The safetensors shape of a torch tensor whose dtype FromTorch maps to
// `dtype`: the same, except F4's last dimension, doubled (lib.rs TensorSpec
// "transparently doubles the last dimension"). nullopt for F4 of rank 0
// (one byte holds two values: no safetensors shape says so), a doubled
// dimension past 2^63 - 1, or a negative dimension.
std::optional<std::vector<uint64_t>> ShapeFromTorch(Dtype dtype, std::span<const int64_t> shape);
// Why ShapeFromTorch gave nullopt, for a message.
std::string NoShapeReason(Dtype dtype, std::span<const int64_t> shape);

// The byte size of a tensor, computed as the reference's Metadata::validate
// does: elements = product of shape (1 for []), bits = elements x bitsize,
// bytes = bits / 8.
enum class SizeProblem : uint8_t {
  kNone,
  kOverflow,    // elements or bits overflow 64 bits (reference: ValidationOverflow)
  kMisaligned,  // bits not a multiple of 8 (reference: MisalignedSlice)
};
struct ByteSize {
  SizeProblem problem = SizeProblem::kNone;
  uint64_t bytes = 0;  // valid when problem == kNone
};
ByteSize TensorByteSize(Dtype dtype, std::span<const uint64_t> shape);

}  // namespace zerofold::safetensors

#endif  // ZEROFOLD_SAFETENSORS_DTYPE_H_
