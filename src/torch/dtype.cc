#include "torch/dtype.h"

#include <array>

namespace zerofold::torch {
namespace {

// Rows in enum order (checked by a test). Storage classes: torch/storage.py
// _dtype_to_storage_type_map. Safetensors codes: the safetensors Dtype enum
// as its torch binding maps them (bindings/python/src/lib.rs get_pydtype);
// float4_e2m1fn_x2 is F4 with the last dimension counted in 4-bit values
// (safetensors/dtype.h TorchShape).
constexpr std::array kTable = {
    //       dtype                   name                 size class                    st         float  cplx   quant
    DTypeInfo{DType::kFloat64,        "float64",           8, "DoubleStorage",        "F64",     true,  false, false},
    DTypeInfo{DType::kFloat32,        "float32",           4, "FloatStorage",         "F32",     true,  false, false},
    DTypeInfo{DType::kFloat16,        "float16",           2, "HalfStorage",          "F16",     true,  false, false},
    DTypeInfo{DType::kBFloat16,       "bfloat16",          2, "BFloat16Storage",      "BF16",    true,  false, false},
    DTypeInfo{DType::kFloat8E4M3FN,   "float8_e4m3fn",     1, "",                     "F8_E4M3", true,  false, false},
    DTypeInfo{DType::kFloat8E5M2,     "float8_e5m2",       1, "",                     "F8_E5M2", true,  false, false},
    DTypeInfo{DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz",   1, "",                     "F8_E4M3FNUZ", true,  false, false},
    DTypeInfo{DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz",   1, "",                     "F8_E5M2FNUZ", true,  false, false},
    DTypeInfo{DType::kInt64,          "int64",             8, "LongStorage",          "I64",     false, false, false},
    DTypeInfo{DType::kInt32,          "int32",             4, "IntStorage",           "I32",     false, false, false},
    DTypeInfo{DType::kInt16,          "int16",             2, "ShortStorage",         "I16",     false, false, false},
    DTypeInfo{DType::kInt8,           "int8",              1, "CharStorage",          "I8",      false, false, false},
    DTypeInfo{DType::kUInt8,          "uint8",             1, "ByteStorage",          "U8",      false, false, false},
    DTypeInfo{DType::kUInt16,         "uint16",            2, "",                     "U16",     false, false, false},
    DTypeInfo{DType::kUInt32,         "uint32",            4, "",                     "U32",     false, false, false},
    DTypeInfo{DType::kUInt64,         "uint64",            8, "",                     "U64",     false, false, false},
    DTypeInfo{DType::kBool,           "bool",              1, "BoolStorage",          "BOOL",    false, false, false},
    DTypeInfo{DType::kComplex64,      "complex64",         8, "ComplexFloatStorage",  "C64",     false, true,  false},
    DTypeInfo{DType::kComplex128,     "complex128",       16, "ComplexDoubleStorage", "",        false, true,  false},
    DTypeInfo{DType::kQInt8,          "qint8",             1, "QInt8Storage",         "",        false, false, true},
    DTypeInfo{DType::kQUInt8,         "quint8",            1, "QUInt8Storage",        "",        false, false, true},
    DTypeInfo{DType::kQInt32,         "qint32",            4, "QInt32Storage",        "",        false, false, true},
    DTypeInfo{DType::kQUInt4x2,       "quint4x2",          1, "QUInt4x2Storage",      "",        false, false, true},
    DTypeInfo{DType::kQUInt2x4,       "quint2x4",          1, "QUInt2x4Storage",      "",        false, false, true},
    DTypeInfo{DType::kComplex32,      "complex32",         4, "",                     "",        false, true,  false},
    DTypeInfo{DType::kFloat8E8M0FNU,  "float8_e8m0fnu",    1, "",                     "F8_E8M0", true,  false, false},
    DTypeInfo{DType::kFloat4E2M1FNx2, "float4_e2m1fn_x2",  1, "",                     "F4",      true,  false, false},
    DTypeInfo{DType::kBits8,          "bits8",             1, "",                     "",        false, false, false},
    DTypeInfo{DType::kBits16,         "bits16",            2, "",                     "",        false, false, false},
    DTypeInfo{DType::kBits1x8,        "bits1x8",           1, "",                     "",        false, false, false},
    DTypeInfo{DType::kBits2x4,        "bits2x4",           1, "",                     "",        false, false, false},
    DTypeInfo{DType::kBits4x2,        "bits4x2",           1, "",                     "",        false, false, false},
};

// torch's other attribute names for the same dtypes (torch.float is
// torch.float32, ...).
struct Alias {
  std::string_view name;
  DType dtype;
};
constexpr std::array kAliases = {
    Alias{"double", DType::kFloat64},   Alias{"float", DType::kFloat32},
    Alias{"half", DType::kFloat16},     Alias{"long", DType::kInt64},
    Alias{"int", DType::kInt32},        Alias{"short", DType::kInt16},
    Alias{"cfloat", DType::kComplex64}, Alias{"cdouble", DType::kComplex128},
    Alias{"chalf", DType::kComplex32},
};

constexpr std::string_view kUntypedStorageClass = "UntypedStorage";

}  // namespace

std::span<const DTypeInfo> AllDTypes() { return kTable; }

const DTypeInfo& Info(DType dtype) { return kTable[static_cast<size_t>(dtype)]; }

std::optional<DType> FromStorageClass(std::string_view class_name) {
  if (class_name.empty()) return std::nullopt;
  for (const DTypeInfo& info : kTable)
    if (info.storage_class == class_name) return info.dtype;
  return std::nullopt;
}

bool IsUntypedStorageClass(std::string_view class_name) { return class_name == kUntypedStorageClass; }

std::optional<DType> FromName(std::string_view name) {
  for (const DTypeInfo& info : kTable)
    if (info.name == name) return info.dtype;
  for (const Alias& alias : kAliases)
    if (alias.name == name) return alias.dtype;
  return std::nullopt;
}

std::optional<DType> FromSafetensors(std::string_view code) {
  if (code.empty()) return std::nullopt;
  for (const DTypeInfo& info : kTable)
    if (info.safetensors == code) return info.dtype;
  return std::nullopt;
}

uint32_t ElementBits(DType dtype) {
  switch (dtype) {
    case DType::kQUInt4x2: return 4;
    case DType::kQUInt2x4: return 2;
    default: return Info(dtype).itemsize * 8;
  }
}

}  // namespace zerofold::torch
