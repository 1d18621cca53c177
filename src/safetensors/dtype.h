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
#include <string_view>

#include "torch/dtype.h"

namespace zerofold::safetensors {

// Names are the format's codes, as pickle opcodes keep pickletools names.
enum class Dtype : uint8_t {
  BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0,
  I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64,
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

// The torch dtype with the same element layout, from torch's dtype table
// (torch::FromSafetensors), or nullopt where torch has none: F4 (torch's
// float4_e2m1fn_x2 counts packed pairs), F6_E2M3, F6_E3M2. F8_E4M3 is
// float8_e4m3fn, F8_E5M2 float8_e5m2, F8_E8M0 float8_e8m0fnu, C64 complex64.
std::optional<torch::DType> ToTorch(Dtype dtype);
// The safetensors dtype for a torch dtype, or nullopt (complex128, the fnuz
// float8 variants, quantized and bits types, ...).
std::optional<Dtype> FromTorch(torch::DType dtype);

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
