// Big-endian archives read as torch 2.6 loads them (torch/storage_source.h),
// against fixtures/dtypes/torch26_big.pt: torch26_little.pt byte-swapped per
// storage by fixtures/dtypes/make_dtypes_fixtures.py, which torch 2.6 loads
// to the little file's values (fixtures/dtypes/verdicts.json).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "io/mem.h"
#include "test_files.h"
#include "torch/read.h"
#include "torch/storage_source.h"

namespace zerofold::torch {
namespace {

using testing::FixtureBytes;

std::vector<std::byte> Iota(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<unsigned char>(i));
  return v;
}

std::vector<std::byte> ReadAll(const RandomSource& src, uint64_t offset, size_t n) {
  std::vector<std::byte> out(n);
  REQUIRE(ReadExactAt(src, offset, out).ok());
  return out;
}

TEST_CASE("swap units follow the storage class torch loads by") {
  Storage s;
  s.dtype = DType::kFloat32;
  CHECK_EQ(ByteSwapUnit(s), 4u);
  s.dtype = DType::kComplex64;  // real and imaginary parts swapped apart
  CHECK_EQ(ByteSwapUnit(s), 4u);
  s.dtype = DType::kComplex128;
  CHECK_EQ(ByteSwapUnit(s), 8u);
  s.dtype = DType::kBFloat16;
  CHECK_EQ(ByteSwapUnit(s), 2u);
  s.dtype = DType::kUInt8;
  CHECK_EQ(ByteSwapUnit(s), 1u);
  s.dtype = DType::kUInt32;  // a _rebuild_tensor_v3 storage: torch.uint8, never swapped
  s.untyped = true;
  CHECK_EQ(ByteSwapUnit(s), 1u);
}

TEST_CASE("SwappedSource reverses runs counted from byte 0, at any offset and length") {
  io::MemSource base("b", Iota(12));
  SwappedSource four(base, 4);
  // Runs 0-3, 4-7, 8-11 reversed: 3 2 1 0 7 6 5 4 11 10 9 8.
  const std::vector<int> want = {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8};
  for (uint64_t off = 0; off < 12; ++off) {
    for (size_t n = 0; off + n <= 12; ++n) {
      CAPTURE(off);
      CAPTURE(n);
      std::vector<std::byte> got = ReadAll(four, off, n);
      for (size_t i = 0; i < n; ++i) CHECK_EQ(static_cast<int>(got[i]), want[off + i]);
    }
  }
  // A short source: only whole runs are given.
  io::MemSource ten("t", Iota(10));
  SwappedSource cut(ten, 4);
  std::vector<std::byte> dst(10);
  Result<size_t> got = cut.ReadAt(0, dst);
  REQUIRE(got.ok());
  CHECK_EQ(*got, 8u);
  got = cut.ReadAt(9, std::span<std::byte>(dst).first(1));
  REQUIRE(got.ok());
  CHECK_EQ(*got, 0u);
}

TEST_CASE("a big-endian archive reads as torch 2.6 loads it; kAsStored keeps its bytes") {
  io::MemSource big("torch26_big.pt", FixtureBytes("fixtures/dtypes/torch26_big.pt"));
  io::MemSource little("torch26_little.pt", FixtureBytes("fixtures/dtypes/torch26_little.pt"));
  Result<Checkpoint> b = ReadCheckpoint(big);
  Result<Checkpoint> l = ReadCheckpoint(little);
  REQUIRE(b.ok());
  REQUIRE(l.ok());
  CHECK(b->big_endian);
  CHECK_FALSE(l->big_endian);
  REQUIRE_EQ(b->storages.size(), l->storages.size());
  StorageSources loads(big);
  StorageSources stored(big, StorageSources::Bytes::kAsStored);
  StorageSources plain(little);
  bool some_swapped = false;
  for (size_t i = 0; i < b->storages.size(); ++i) {
    const Storage& sb = b->storages[i];
    const Storage& sl = l->storages[i];
    CAPTURE(sb.key);
    CHECK_EQ(sl.swap_unit, 1u);
    CHECK_EQ(sb.swap_unit, ByteSwapUnit(sb));
    some_swapped = some_swapped || sb.swap_unit > 1;
    Result<const RandomSource*> want = plain.For(sl);
    REQUIRE(want.ok());
    std::vector<std::byte> expect = ReadAll(**want, 0, sl.nbytes);
    Result<const RandomSource*> got = loads.For(sb);
    REQUIRE(got.ok());
    CHECK(ReadAll(**got, 0, sb.nbytes) == expect);
    // As stored: each run reversed against the little file's.
    Result<const RandomSource*> raw = stored.For(sb);
    REQUIRE(raw.ok());
    std::vector<std::byte> swapped_back = ReadAll(**raw, 0, sb.nbytes);
    SwapBytes(swapped_back, sb.swap_unit);
    CHECK(swapped_back == expect);
  }
  CHECK(some_swapped);
  // The uint32 tensor's storage is untyped: torch does not swap it.
  for (const Tensor& t : b->tensors)
    if (t.name == "u32") CHECK_EQ(b->storages[t.storage].swap_unit, 1u);
}

TEST_CASE("RecordLittleEndian rewrites the byteorder record only") {
  std::vector<ExtraRecord> extras = {{"version", {std::byte{'3'}, std::byte{'\n'}}},
                                     {"byteorder", {std::byte{'b'}, std::byte{'i'}, std::byte{'g'}}}};
  RecordLittleEndian(extras);
  CHECK_EQ(extras[0].bytes.size(), 2u);
  std::string text(reinterpret_cast<const char*>(extras[1].bytes.data()), extras[1].bytes.size());
  CHECK_EQ(text, "little");
}

}  // namespace
}  // namespace zerofold::torch
