#include "torch/dtype.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace zerofold::torch {
namespace {

TEST_CASE("the dtype table is in enum order with unique names") {
  std::set<std::string_view> names;
  for (size_t i = 0; i < AllDTypes().size(); ++i) {
    const DTypeInfo& info = AllDTypes()[i];
    CAPTURE(info.name);
    CHECK_EQ(static_cast<size_t>(info.dtype), i);
    CHECK_EQ(&Info(info.dtype), &info);
    CHECK(names.insert(info.name).second);
    CHECK_EQ(FromName(info.name), info.dtype);
  }
  CHECK_EQ(AllDTypes().size(), 32u);
}

// Item sizes, storage classes, flags: torch 1.13's torch._utils._element_size,
// torch.storage._dtype_to_storage_type_map, dtype.is_floating_point /
// is_complex; the float8, uint16/32/64 and bits rows from torch 2.x sources.
struct Row {
  DType dtype;
  std::string_view name;
  uint32_t itemsize;
  std::string_view storage_class;
  std::string_view safetensors;
  bool floating, complex, quantized;
};
constexpr Row kRows[] = {
    {DType::kFloat64, "float64", 8, "DoubleStorage", "F64", true, false, false},
    {DType::kFloat32, "float32", 4, "FloatStorage", "F32", true, false, false},
    {DType::kFloat16, "float16", 2, "HalfStorage", "F16", true, false, false},
    {DType::kBFloat16, "bfloat16", 2, "BFloat16Storage", "BF16", true, false, false},
    {DType::kFloat8E4M3FN, "float8_e4m3fn", 1, "", "F8_E4M3", true, false, false},
    {DType::kFloat8E5M2, "float8_e5m2", 1, "", "F8_E5M2", true, false, false},
    {DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz", 1, "", "F8_E4M3FNUZ", true, false, false},
    {DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz", 1, "", "F8_E5M2FNUZ", true, false, false},
    {DType::kInt64, "int64", 8, "LongStorage", "I64", false, false, false},
    {DType::kInt32, "int32", 4, "IntStorage", "I32", false, false, false},
    {DType::kInt16, "int16", 2, "ShortStorage", "I16", false, false, false},
    {DType::kInt8, "int8", 1, "CharStorage", "I8", false, false, false},
    {DType::kUInt8, "uint8", 1, "ByteStorage", "U8", false, false, false},
    {DType::kUInt16, "uint16", 2, "", "U16", false, false, false},
    {DType::kUInt32, "uint32", 4, "", "U32", false, false, false},
    {DType::kUInt64, "uint64", 8, "", "U64", false, false, false},
    {DType::kBool, "bool", 1, "BoolStorage", "BOOL", false, false, false},
    {DType::kComplex64, "complex64", 8, "ComplexFloatStorage", "C64", false, true, false},
    {DType::kComplex128, "complex128", 16, "ComplexDoubleStorage", "", false, true, false},
    {DType::kQInt8, "qint8", 1, "QInt8Storage", "", false, false, true},
    {DType::kQUInt8, "quint8", 1, "QUInt8Storage", "", false, false, true},
    {DType::kQInt32, "qint32", 4, "QInt32Storage", "", false, false, true},
    {DType::kQUInt4x2, "quint4x2", 1, "QUInt4x2Storage", "", false, false, true},
    {DType::kQUInt2x4, "quint2x4", 1, "QUInt2x4Storage", "", false, false, true},
    {DType::kComplex32, "complex32", 4, "", "", false, true, false},
    {DType::kFloat8E8M0FNU, "float8_e8m0fnu", 1, "", "F8_E8M0", true, false, false},
    {DType::kFloat4E2M1FNx2, "float4_e2m1fn_x2", 1, "", "F4", true, false, false},
    {DType::kBits8, "bits8", 1, "", "", false, false, false},
    {DType::kBits16, "bits16", 2, "", "", false, false, false},
    {DType::kBits1x8, "bits1x8", 1, "", "", false, false, false},
    {DType::kBits2x4, "bits2x4", 1, "", "", false, false, false},
    {DType::kBits4x2, "bits4x2", 1, "", "", false, false, false},
};

TEST_CASE("every dtype has torch's name, item size and storage class") {
  CHECK_EQ(std::size(kRows), AllDTypes().size());
  for (const Row& r : kRows) {
    CAPTURE(r.name);
    const DTypeInfo& info = Info(r.dtype);
    CHECK_EQ(info.name, r.name);
    CHECK_EQ(info.itemsize, r.itemsize);
    CHECK_EQ(info.storage_class, r.storage_class);
    CHECK_EQ(info.safetensors, r.safetensors);
    CHECK_EQ(info.is_floating, r.floating);
    CHECK_EQ(info.is_complex, r.complex);
    CHECK_EQ(info.is_quantized, r.quantized);
    if (!r.storage_class.empty()) CHECK_EQ(FromStorageClass(r.storage_class), r.dtype);
    if (!r.safetensors.empty()) CHECK_EQ(FromSafetensors(r.safetensors), r.dtype);
  }
}

TEST_CASE("torch's alias names map to the same dtypes") {
  CHECK_EQ(FromName("float"), DType::kFloat32);
  CHECK_EQ(FromName("double"), DType::kFloat64);
  CHECK_EQ(FromName("half"), DType::kFloat16);
  CHECK_EQ(FromName("long"), DType::kInt64);
  CHECK_EQ(FromName("int"), DType::kInt32);
  CHECK_EQ(FromName("short"), DType::kInt16);
  CHECK_EQ(FromName("cfloat"), DType::kComplex64);
  CHECK_EQ(FromName("cdouble"), DType::kComplex128);
  CHECK_EQ(FromName("chalf"), DType::kComplex32);
  CHECK_FALSE(FromName("float128").has_value());
  CHECK_FALSE(FromName("").has_value());
  CHECK_FALSE(FromName("Float").has_value());
  CHECK_FALSE(FromName("torch.float32").has_value());
}

TEST_CASE("storage classes: UntypedStorage is no dtype, unknown names fail") {
  CHECK(IsUntypedStorageClass("UntypedStorage"));
  CHECK_FALSE(FromStorageClass("UntypedStorage").has_value());
  CHECK_FALSE(IsUntypedStorageClass("FloatStorage"));
  CHECK_FALSE(FromStorageClass("").has_value());
  CHECK_FALSE(FromStorageClass("TypedStorage").has_value());
  CHECK_FALSE(FromStorageClass("Float8_e4m3fnStorage").has_value());
  CHECK_FALSE(FromSafetensors("").has_value());
  CHECK_EQ(FromSafetensors("F4"), DType::kFloat4E2M1FNx2);  // packed pairs: safetensors/dtype.h TorchShape
  CHECK_FALSE(FromSafetensors("F6_E2M3").has_value());
  CHECK_FALSE(FromSafetensors("f32").has_value());
}

}  // namespace
}  // namespace zerofold::torch
