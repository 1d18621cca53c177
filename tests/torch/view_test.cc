#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "torch/checkpoint.h"

namespace zerofold::torch {
namespace {

struct ExtentCase {
  const char* name;
  std::vector<int64_t> shape, stride;
  int64_t offset;
  uint32_t itemsize;
  uint64_t begin, end;
};

const ExtentCase kGood[] = {
    {"contiguous 2x3 float", {2, 3}, {3, 1}, 0, 4, 0, 24},
    {"offset view", {2, 3}, {3, 1}, 10, 4, 40, 64},
    {"transposed", {3, 2}, {1, 3}, 0, 2, 0, 12},
    {"scalar", {}, {}, 7, 8, 56, 64},
    {"one element", {1}, {1}, 5, 1, 5, 6},
    {"zero stride (expand)", {1000, 4}, {0, 1}, 2, 4, 8, 24},
    {"all zero strides", {5, 5}, {0, 0}, 3, 2, 6, 8},
    {"strided every other", {4}, {2}, 1, 4, 4, 32},
    {"size-1 dim with huge stride", {1, 3}, {INT64_MAX, 1}, 0, 4, 0, 12},
    {"empty: zero dim", {0, 3}, {3, 1}, 100, 4, 0, 0},
    {"empty ignores offset and strides", {3, 0}, {INT64_MAX, INT64_MAX}, INT64_MAX, 8, 0, 0},
    {"largest fitting", {2}, {1}, INT64_MAX - 2, 1, uint64_t{INT64_MAX} - 2, uint64_t{INT64_MAX}},
};

TEST_CASE("ExtentOf gives exact byte extents") {
  for (const ExtentCase& c : kGood) {
    CAPTURE(c.name);
    Result<ByteRange> r = ExtentOf(c.shape, c.stride, c.offset, c.itemsize);
    REQUIRE(r.ok());
    CHECK_EQ(r->begin, c.begin);
    CHECK_EQ(r->end, c.end);
  }
}

struct BadCase {
  const char* name;
  std::vector<int64_t> shape, stride;
  int64_t offset;
  uint32_t itemsize;
  const char* message;
};

const BadCase kBad[] = {
    {"negative offset", {2}, {1}, -1, 4, "view storage offset is negative: -1"},
    {"negative size", {2, -1}, {1, 1}, 0, 4, "view size[1] is negative: -1"},
    {"negative stride", {2, 3}, {-3, 1}, 0, 4, "view stride[0] is negative: -3"},
    {"rank mismatch", {2, 3}, {1}, 0, 4, "view has 2 sizes but 1 strides"},
    {"stride product overflows", {3, 2}, {INT64_MAX, 1}, 0, 1, "view extent overflows at dim 0 (size 3, stride 9223372036854775807)"},
    {"sum overflows", {2, 2}, {INT64_MAX, INT64_MAX}, 0, 1, "view extent overflows at dim 1 (size 2, stride 9223372036854775807)"},
    {"huge size", {INT64_MAX, 2}, {4, 1}, 0, 1, "view extent overflows at dim 0 (size 9223372036854775807, stride 4)"},
    {"end overflows", {2}, {1}, INT64_MAX - 1, 1, "view extent overflows: last element 9223372036854775807 of 1-byte items"},
    {"bytes overflow", {2}, {1}, INT64_MAX / 4, 4, "view extent overflows: last element 2305843009213693952 of 4-byte items"},
};

TEST_CASE("ExtentOf rejects negative values and overflow") {
  for (const BadCase& c : kBad) {
    CAPTURE(c.name);
    Result<ByteRange> r = ExtentOf(c.shape, c.stride, c.offset, c.itemsize);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), Code::kCorrupt);
    CHECK_EQ(r.status().message(), c.message);
  }
}

TEST_CASE("ViewExtent uses the dtype's item size and names the tensor") {
  Tensor t;
  t.name = "model.layer.weight";
  t.dtype = DType::kBFloat16;
  t.shape = {4, 5};
  t.stride = {5, 1};
  t.storage_offset = 3;
  Result<ByteRange> r = ViewExtent(t);
  REQUIRE(r.ok());
  CHECK_EQ(r->begin, 6u);
  CHECK_EQ(r->end, 46u);
  CHECK_EQ(t.numel(), 20u);
  CHECK_EQ(t.nbytes(), 40u);
  t.stride = {5, -1};
  Result<ByteRange> bad = ViewExtent(t);
  REQUIRE_FALSE(bad.ok());
  CHECK_EQ(bad.status().record(), "model.layer.weight");
}

TEST_CASE("numel is the product of sizes, zero when empty, saturating") {
  Tensor t;
  t.dtype = DType::kFloat64;
  CHECK_EQ(t.numel(), 1u);  // a scalar
  CHECK_EQ(t.nbytes(), 8u);
  t.shape = {3, 0, 7};
  CHECK_EQ(t.numel(), 0u);
  t.shape = {INT64_MAX, INT64_MAX};
  CHECK_EQ(t.numel(), UINT64_MAX);
  CHECK_EQ(t.nbytes(), UINT64_MAX);
  t.shape = {1ll << 40, 1ll << 20};
  CHECK_EQ(t.numel(), 1ull << 60);
  CHECK_EQ(t.nbytes(), 1ull << 63);
  t.shape = {1ll << 40, 1ll << 23};
  CHECK_EQ(t.numel(), 1ull << 63);
  CHECK_EQ(t.nbytes(), UINT64_MAX);
}

TEST_CASE("CheckViews: records hold their storages, views stay inside them") {
  Checkpoint c;
  Storage s;
  s.key = "0";
  s.dtype = DType::kFloat32;
  s.nbytes = 40;
  s.record = "archive/data/0";
  s.record_size = 40;
  s.data_offset = 64;
  c.storages.push_back(s);
  Tensor t;
  t.name = "w";
  t.dtype = DType::kFloat32;
  t.shape = {10};
  t.stride = {1};
  c.tensors.push_back(t);
  CHECK(CheckViews(c).ok());

  c.tensors[0].storage_offset = 1;
  Status past = CheckViews(c);
  CHECK_EQ(past.code(), Code::kCorrupt);
  CHECK_EQ(past.record(), "w");
  CHECK_EQ(past.message(), "view bytes [4, 44) leave storage '0' of 40 bytes");

  c.tensors[0].storage_offset = 0;
  c.tensors[0].dtype = DType::kFloat64;  // the same view read as 8-byte items
  CHECK_EQ(CheckViews(c).message(), "view bytes [0, 80) leave storage '0' of 40 bytes");

  c.tensors[0].dtype = DType::kFloat32;
  c.storages[0].record_size = 39;
  Status short_record = CheckViews(c);
  CHECK_EQ(short_record.code(), Code::kCorrupt);
  CHECK_EQ(short_record.record(), "archive/data/0");
  CHECK_EQ(short_record.offset(), 64u);
  CHECK_EQ(short_record.message(), "storage '0' declares 40 bytes, its record archive/data/0 holds only 39");

  c.storages[0].record_size = 40;
  c.tensors[0].storage = 3;
  CHECK_EQ(CheckViews(c).code(), Code::kInternal);

  c.tensors[0].storage = 0;
  c.tensors[0].shape = {0};
  c.tensors[0].storage_offset = 1000;  // empty views take no bytes
  CHECK(CheckViews(c).ok());
}

}  // namespace
}  // namespace zerofold::torch
