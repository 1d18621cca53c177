#include "ranks/shard.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "json/reader.h"

namespace zerofold::ranks {
namespace {

Placement S(int64_t dim) { return {PlacementKind::kShard, dim, 1}; }
Placement SS(int64_t dim, int64_t split) { return {PlacementKind::kStridedShard, dim, split}; }
Placement R() { return {PlacementKind::kReplicate, 0, 1}; }

Box BoxAt(std::vector<int64_t> shape, std::vector<int64_t> mesh, std::vector<int64_t> coords,
          std::vector<Placement> placements) {
  Result<Box> b = LocalBox(shape, mesh, coords, placements);
  REQUIRE(b.ok());
  return *b;
}

// torch.chunk's chunk sizes, recorded by fixtures/ranks/make_rank_fixtures.py
// with torch 2.6: every chunk ChunkOf gives, and empty past them.
TEST_CASE("ChunkOf gives torch.chunk's chunks") {
  std::ifstream f(std::string(ZF_SOURCE_ROOT) + "/fixtures/ranks/chunk_cases.json");
  std::stringstream text;
  text << f.rdbuf();
  Result<json::Value> doc = json::Parse(text.str());
  REQUIRE(doc.ok());
  const json::Value* cases = doc->Find("cases");
  REQUIRE(cases != nullptr);
  size_t checked = 0;
  for (const json::Value& c : cases->array()) {
    const int64_t size = *c.Find("size")->AsInt64(), n = *c.Find("n")->AsInt64();
    std::vector<int64_t> chunks;
    for (const json::Value& v : c.Find("chunks")->array()) chunks.push_back(*v.AsInt64());
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      const Span s = ChunkOf(size, n, i);
      const int64_t want = i < static_cast<int64_t>(chunks.size()) ? chunks[i] : 0;
      INFO("size " << size << " n " << n << " chunk " << i);
      CHECK(s.size == want);
      if (want > 0) CHECK(s.offset == offset);
      offset += want;
      ++checked;
    }
    CHECK(offset == size);
  }
  CHECK(checked == 150);
}

TEST_CASE("LocalBox: uneven and empty shards on one mesh dim") {
  CHECK(BoxAt({5, 4}, {2}, {0}, {S(0)}) == Box{{0, 0}, {3, 4}});
  CHECK(BoxAt({5, 4}, {2}, {1}, {S(0)}) == Box{{3, 0}, {2, 4}});
  CHECK(BoxAt({1, 3}, {4}, {0}, {S(0)}) == Box{{0, 0}, {1, 3}});
  for (int64_t r = 1; r < 4; ++r) CHECK(BoxAt({1, 3}, {4}, {r}, {S(0)}).empty());
  // 5 rows over 4: 2, 2, 1, 0 (torch.chunk returns 3 chunks).
  CHECK(BoxAt({5}, {4}, {2}, {S(0)}) == Box{{4}, {1}});
  CHECK(BoxAt({5}, {4}, {3}, {S(0)}).empty());
  CHECK(BoxAt({4, 6}, {3}, {2}, {S(1)}) == Box{{0, 4}, {4, 2}});
  CHECK(BoxAt({3}, {2}, {1}, {R()}) == Box{{0}, {3}});
}

TEST_CASE("LocalBox: HSDP and nested shards of one dim chunk in mesh order") {
  // (Replicate, Shard(0)) on (2, 2): both replicas hold the same boxes.
  CHECK(BoxAt({7, 2}, {2, 2}, {0, 1}, {R(), S(0)}) == BoxAt({7, 2}, {2, 2}, {1, 1}, {R(), S(0)}));
  CHECK(BoxAt({7, 2}, {2, 2}, {1, 1}, {R(), S(0)}) == Box{{4, 0}, {3, 2}});
  // (Shard(0), Shard(0)): 7 rows -> 4 | 3, then 2 | 2 and 2 | 1.
  CHECK(BoxAt({7}, {2, 2}, {0, 1}, {S(0), S(0)}) == Box{{2}, {2}});
  CHECK(BoxAt({7}, {2, 2}, {1, 0}, {S(0), S(0)}) == Box{{4}, {2}});
  CHECK(BoxAt({7}, {2, 2}, {1, 1}, {S(0), S(0)}) == Box{{6}, {1}});
  // FSDP x TP rowwise: (Shard(0), Shard(1)).
  CHECK(BoxAt({5, 8}, {2, 2}, {1, 1}, {S(0), S(1)}) == Box{{3, 4}, {2, 4}});
}

TEST_CASE("LocalBox: FSDP2 over TP's colwise shard (_StridedShard)") {
  // (_StridedShard(0, 2), Shard(0)) on (dp 2, tp 2), 8 rows: TP's chunk t
  // (rows 4t..4t+3), then FSDP's chunk d of it: rows 4t + 2d, 4t + 2d + 1.
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t t = 0; t < 2; ++t)
      CHECK(BoxAt({8, 6}, {2, 2}, {d, t}, {SS(0, 2), S(0)}) == Box{{4 * t + 2 * d, 0}, {2, 6}});
  // A split factor other than the splits before it is not FSDP2's layout.
  CHECK(LocalBox(std::vector<int64_t>{8}, std::vector<int64_t>{2, 2}, std::vector<int64_t>{0, 0},
                 std::vector<Placement>{SS(0, 3), S(0)})
            .status()
            .code() == Code::kUnsupported);
}

TEST_CASE("LocalBox refuses Partial and what disagrees") {
  const std::vector<int64_t> shape{4}, mesh{2}, c0{0}, c2{2};
  CHECK(LocalBox(shape, mesh, c0, std::vector<Placement>{{PlacementKind::kPartial, 0, 1}}).status().code() ==
        Code::kUnsupported);
  CHECK(LocalBox(shape, mesh, c2, std::vector<Placement>{S(0)}).status().code() == Code::kCorrupt);
  CHECK(LocalBox(shape, mesh, c0, std::vector<Placement>{S(1)}).status().code() == Code::kCorrupt);
  CHECK(LocalBox(shape, mesh, c0, std::vector<Placement>{S(0), S(0)}).status().code() == Code::kCorrupt);
}

TEST_CASE("PlacementText spells placements as torch prints them") {
  CHECK(PlacementsText(std::vector<Placement>{SS(0, 2), S(1), R()}) == "(_StridedShard(0, 2), Shard(1), Replicate())");
}

}  // namespace
}  // namespace zerofold::ranks
