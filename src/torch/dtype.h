// The torch dtype table: names as torch spells them, item sizes, storage
// class names, safetensors codes. Values of DType are not persisted; names
// are (JSON output): append only.
#ifndef ZEROFOLD_TORCH_DTYPE_H_
#define ZEROFOLD_TORCH_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace zerofold::torch {

enum class DType : uint8_t {
  kFloat64, kFloat32, kFloat16, kBFloat16,
  kFloat8E4M3FN, kFloat8E5M2, kFloat8E4M3FNUZ, kFloat8E5M2FNUZ,
  kInt64, kInt32, kInt16, kInt8,
  kUInt8, kUInt16, kUInt32, kUInt64,
  kBool,
  kComplex64, kComplex128,
  kQInt8, kQUInt8, kQInt32, kQUInt4x2, kQUInt2x4,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;           // "float32": torch's spelling without "torch."
  uint32_t itemsize;               // bytes per element
  std::string_view storage_class;  // "FloatStorage" (legacy typed storage), "" if none
  std::string_view safetensors;    // "F32", "" if safetensors has no code
  bool is_floating;                // float64/32/16, bfloat16, float8 variants
  bool is_quantized;
};

const DTypeInfo& Info(DType dtype);
// From the storage class name of a `torch.XStorage` global ("FloatStorage").
std::optional<DType> FromStorageClass(std::string_view class_name);
// From torch's name ("float32", also "float", "half", "long", ...).
std::optional<DType> FromName(std::string_view name);
// From a safetensors code ("F32").
std::optional<DType> FromSafetensors(std::string_view code);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_DTYPE_H_
