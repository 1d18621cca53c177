// The torch dtype table: names as torch spells them, item sizes, storage
// class names, safetensors codes. Values of DType are not persisted; names
// are (JSON output): append only.
//
// Covers every dtype torch can serialize: those with a legacy typed storage
// class (torch/storage.py _dtype_to_storage_type_map, written through
// _rebuild_tensor_v2) and those written as an UntypedStorage plus a dtype
// global (torch/storage.py _new_dtypes, written through _rebuild_tensor_v3).
//
// Thread safety: the table is immutable; every function is thread-safe.
#ifndef ZEROFOLD_TORCH_DTYPE_H_
#define ZEROFOLD_TORCH_DTYPE_H_

#include <cstdint>
#include <optional>
#include <span>
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
  // Appended: the rest of torch's _new_dtypes (written by _rebuild_tensor_v3).
  kComplex32, kFloat8E8M0FNU, kFloat4E2M1FNx2,
  kBits8, kBits16, kBits1x8, kBits2x4, kBits4x2,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;           // "float32": torch's spelling without "torch."
  uint32_t itemsize;               // bytes per element
  std::string_view storage_class;  // "FloatStorage" (legacy typed storage), "" if none
  std::string_view safetensors;    // "F32", "" if safetensors has no code
  bool is_floating;                // float64/32/16, bfloat16, float8 and float4 variants
  bool is_complex;                 // complex32/64/128: two floats of itemsize / 2
  bool is_quantized;               // qint8, quint8, qint32, quint4x2, quint2x4
};

// The info of every DType, in enum order.
std::span<const DTypeInfo> AllDTypes();

const DTypeInfo& Info(DType dtype);
// Bits per element: itemsize x 8, except the packed quantized types
// quint4x2 (4) and quint2x4 (2), whose storages hold ceil(numel x bits / 8)
// bytes while torch reports an element size of 1.
uint32_t ElementBits(DType dtype);
// From the storage class name of a `torch.XStorage` global ("FloatStorage").
// "UntypedStorage" is not a dtype: it gives nullopt (see IsUntypedStorageClass).
std::optional<DType> FromStorageClass(std::string_view class_name);
// True for "UntypedStorage", the class torch >= 1.13 pickles for byte storages.
bool IsUntypedStorageClass(std::string_view class_name);
// From torch's name ("float32", also "float", "half", "long", ...).
std::optional<DType> FromName(std::string_view name);
// From a safetensors code ("F32").
std::optional<DType> FromSafetensors(std::string_view code);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_DTYPE_H_
