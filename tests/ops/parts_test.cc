#include "ops/parts.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

namespace zerofold::ops {
namespace {

TEST_CASE("parts: --part parses 0-based I/N and finish, refuses the rest") {
  Result<PartSpec> p = ParsePart("0/3");
  REQUIRE(p.ok());
  CHECK(p->kind == PartSpec::Kind::kPart);
  CHECK(p->index == 0);
  CHECK(p->count == 3);
  p = ParsePart("2/3");
  REQUIRE(p.ok());
  CHECK(p->index == 2);
  p = ParsePart("0/1");
  REQUIRE(p.ok());
  CHECK(p->count == 1);
  p = ParsePart("finish");
  REQUIRE(p.ok());
  CHECK(p->kind == PartSpec::Kind::kFinish);
  for (const char* bad : {"3/3", "1/0", "0/0", "-1/2", "1", "a/2", "1/2x", "/2", "1/", "", "Finish", "4294967296/2"}) {
    CAPTURE(bad);
    CHECK(ParsePart(bad).status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("parts: largest file first onto the least loaded part, ties by index") {
  // 10 -> p0, 8 -> p1, 7 -> p2, 5 -> p2 (loads 10, 8, 7), 3 -> p1 (loads 10, 8, 12).
  CHECK(AssignParts({5, 10, 7, 8, 3}, 3) == std::vector<uint32_t>{2, 0, 2, 1, 1});
  // Equal sizes: file order, round robin over the parts.
  CHECK(AssignParts({4, 4, 4, 4, 4}, 2) == std::vector<uint32_t>{0, 1, 0, 1, 0});
  // One part takes everything; more parts than files leave parts empty.
  CHECK(AssignParts({1, 2, 3}, 1) == std::vector<uint32_t>{0, 0, 0});
  CHECK(AssignParts({9, 1}, 4) == std::vector<uint32_t>{0, 1});
  CHECK(AssignParts({}, 3).empty());
}

TEST_CASE("parts: the heaviest part holds at most the mean plus the largest file") {
  std::vector<uint64_t> sizes;
  uint64_t x = 12345, total = 0, largest = 0;
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sizes.push_back((x >> 33) % 5000 + 1);
    total += sizes.back();
    largest = std::max(largest, sizes.back());
  }
  for (uint32_t n : {2u, 3u, 7u, 16u}) {
    std::vector<uint32_t> part = AssignParts(sizes, n);
    std::vector<uint64_t> load(n, 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      REQUIRE(part[i] < n);
      load[part[i]] += sizes[i];
    }
    uint64_t heaviest = *std::max_element(load.begin(), load.end());
    CHECK(heaviest <= total / n + largest);
    CHECK(part == AssignParts(sizes, n));  // deterministic
  }
}

}  // namespace
}  // namespace zerofold::ops
