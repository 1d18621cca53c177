#include "io/coalescing_source.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem_env.h"

namespace zerofold::io {
namespace {

std::vector<std::byte> Pattern(size_t n) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>(i * 7 + i / 251));
  return b;
}

TEST_CASE("small reads come from a few blocks, large ones go through; the bytes are the source's") {
  const size_t n = 1 << 20;
  MemEnv mem;
  mem.SetFile("f", Pattern(n));
  FaultEnv counting(&mem);
  CoalescingSource src(counting.OpenRandom("f").value(), 4096, 2);
  const std::vector<std::byte> want = Pattern(n);
  auto check = [&](uint64_t offset, size_t len) {
    CAPTURE(offset);
    CAPTURE(len);
    std::vector<std::byte> got(len);
    Result<size_t> r = src.ReadAt(offset, got);
    REQUIRE(r.ok());
    const size_t expect = offset >= n ? 0 : std::min<size_t>(len, n - offset);
    CHECK_EQ(*r, expect);
    CHECK(std::equal(got.begin(), got.begin() + expect, want.begin() + offset));
  };
  // A zip's pattern: the head, then the tail and reads around it.
  check(0, 16);
  check(0, 265);
  check(64, 1091);
  CHECK_EQ(counting.reads(), 1u);
  check(n - 4096, 4096);  // as large as a block: through
  CHECK_EQ(counting.reads(), 2u);
  check(n - 200, 20);
  check(n - 150, 56);
  check(n - 100, 100);
  check(n - 10, 64);  // short at the end of the source
  CHECK_EQ(counting.reads(), 3u);
  check(3000, 2000);  // past the head block's end: a new block
  CHECK_EQ(counting.reads(), 4u);
  check(10, 10);  // the head block was dropped (2 blocks kept)
  CHECK_EQ(counting.reads(), 5u);
  check(n, 10);
  check(n + 5, 10);
  check(12345, 100000);
  CHECK_EQ(counting.reads(), 6u);
  check(3100, 8000);  // its first 3996 bytes are the cached block's
  CHECK_EQ(counting.reads(), 7u);
  check(3000, 4096);  // all of it cached: no read
  CHECK_EQ(counting.reads(), 7u);
}

TEST_CASE("a failed read is the source's error, and nothing is cached") {
  MemEnv mem;
  mem.SetFile("f", Pattern(10000));
  FaultEnv fault(&mem);
  CoalescingSource src(fault.OpenRandom("f").value(), 4096, 2);
  fault.FailRead(1);
  std::vector<std::byte> got(10);
  Status s = src.ReadAt(0, got).status();
  CHECK_EQ(s.code(), Code::kIO);
  CHECK_EQ(s.path(), "f");
  Result<size_t> again = src.ReadAt(0, got);
  REQUIRE(again.ok());
  CHECK_EQ(*again, 10u);
}

}  // namespace
}  // namespace zerofold::io
