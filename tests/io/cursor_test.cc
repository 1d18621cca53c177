#include "io/cursor.h"

#include <doctest/doctest.h>

#include <vector>

#include "io/checked_math.h"

namespace zerofold::io {
namespace {

std::vector<std::byte> Bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}

TEST_CASE("cursor reads little-endian values and reports absolute offsets") {
  std::vector<std::byte> b = Bytes({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  Cursor cur(b, 1000);
  CHECK_EQ(cur.U8().value(), 1);
  CHECK_EQ(cur.U16le().value(), 0x0302);
  CHECK_EQ(cur.U32le().value(), 0x07060504u);
  CHECK_EQ(cur.offset(), 1007u);
  CHECK_EQ(cur.U64le().value(), 0x0f0e0d0c0b0a0908ull);
  CHECK(cur.empty());
  Result<uint8_t> past = cur.U8();
  REQUIRE_FALSE(past.ok());
  CHECK_EQ(past.status().code(), Code::kCorrupt);
  CHECK_EQ(past.status().offset(), 1015u);
}

TEST_CASE("every truncated read fails at the start of the read") {
  std::vector<std::byte> b = Bytes({1, 2, 3});
  Cursor cur(b, 10);
  CHECK_EQ(cur.Skip(1).ok(), true);
  Result<uint32_t> r = cur.U32le();
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().offset(), 11u);
  CHECK_EQ(r.status().message(), "truncated: need 4 bytes, 2 left");
  CHECK_EQ(cur.offset(), 11u);  // a failed read consumes nothing
  CHECK_FALSE(cur.Take(3).ok());
  CHECK(cur.Take(2).ok());
}

TEST_CASE("TakeUntil finds the delimiter within the limit") {
  std::string s = "torch\nFloatStorage\n";
  Cursor cur(AsBytes(s), 0);
  CHECK_EQ(cur.TakeUntil(std::byte('\n'), 100).value(), "torch");
  CHECK_EQ(cur.TakeUntil(std::byte('\n'), 5).status().code(), Code::kCorrupt);
  CHECK_EQ(cur.TakeUntil(std::byte('\n'), 100).value(), "FloatStorage");
  CHECK_FALSE(cur.TakeUntil(std::byte('\n'), 100).ok());
}

TEST_CASE("checked math catches overflow") {
  CHECK_FALSE(CheckedAdd<uint64_t>(UINT64_MAX, 1).has_value());
  CHECK_EQ(*CheckedAdd<uint64_t>(2, 3), 5u);
  CHECK_FALSE(CheckedMul<int64_t>(INT64_MAX, 2).has_value());
  CHECK(RangeInside(10, 5, 15));
  CHECK_FALSE(RangeInside(10, 6, 15));
  CHECK_FALSE(RangeInside(UINT64_MAX, 2, 15));
}

TEST_CASE("status formats as one line") {
  Status s = Status::Corrupt("bad thing");
  s.WithOffset(12).WithRecord("archive/data.pkl").WithPath("x.pt");
  s.WithOffset(99);  // inner offset wins
  CHECK_EQ(s.ToString(), "x.pt: archive/data.pkl @ 12: corrupt: bad thing");
  CHECK_EQ(Status::OK().ToString(), "ok");
  Status copy = s;
  CHECK_EQ(copy.code(), Code::kCorrupt);
}

}  // namespace
}  // namespace zerofold::io
