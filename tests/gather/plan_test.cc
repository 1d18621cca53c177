#include "gather/plan.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::gather {
namespace {

Piece Box(std::vector<int64_t> offsets, std::vector<int64_t> sizes) {
  Piece p;
  p.offsets = std::move(offsets);
  p.sizes = std::move(sizes);
  return p;
}

TEST_CASE("CheckTiling accepts exact tilings of every shape") {
  struct Case {
    std::vector<int64_t> grid;
    std::vector<Piece> pieces;
  } cases[] = {
      {{10, 3}, {Box({0, 0}, {3, 3}), Box({3, 0}, {3, 3}), Box({6, 0}, {3, 3}), Box({9, 0}, {1, 3})}},
      {{4, 7}, {Box({0, 6}, {4, 1}), Box({0, 0}, {4, 3}), Box({0, 3}, {4, 3})}},
      {{5, 7}, {Box({0, 0}, {3, 4}), Box({0, 4}, {3, 3}), Box({3, 0}, {2, 4}), Box({3, 4}, {2, 3})}},
      {{}, {Box({}, {})}},
      {{2, 5}, {Box({0, 0}, {2, 5}), Box({2, 0}, {0, 5}), Box({0, 0}, {0, 5})}},
      {{0, 4}, {}},
  };
  for (const Case& c : cases) CHECK(CheckTiling(c.grid, c.pieces, {}).ok());
}

TEST_CASE("CheckTiling: gap, overlap, outside, overflow, wrong rank: kCorrupt naming the chunks") {
  const std::vector<std::string> names = {"chunk 0 (__0_0.distcp)", "chunk 1 (__1_0.distcp)"};
  struct Case {
    const char* name;
    std::vector<int64_t> grid;
    std::vector<Piece> pieces;
    const char* message;
  } cases[] = {
      {"gap", {4, 3}, {Box({0, 0}, {2, 3}), Box({3, 0}, {1, 3})},
       "the chunks cover 9 of the 12 elements of shape [4, 3]: a gap"},
      {"overlap", {4, 3}, {Box({0, 0}, {3, 3}), Box({2, 0}, {2, 3})},
       "chunk 0 (__0_0.distcp) (offsets [0, 0] sizes [3, 3]) and chunk 1 (__1_0.distcp) (offsets [2, 0] sizes [2, "
       "3]) overlap"},
      {"overlap on dim 1", {2, 6}, {Box({0, 0}, {2, 4}), Box({0, 3}, {2, 3})},
       "chunk 0 (__0_0.distcp) (offsets [0, 0] sizes [2, 4]) and chunk 1 (__1_0.distcp) (offsets [0, 3] sizes [2, "
       "3]) overlap"},
      {"outside", {4, 3}, {Box({0, 0}, {2, 3}), Box({2, 1}, {2, 3})},
       "chunk 1 (__1_0.distcp) (offsets [2, 1] sizes [2, 3]) lies outside the shape [4, 3] in dim 1"},
      {"offset + size overflows", {4}, {Box({0}, {4}), Box({INT64_MAX}, {2})},
       "chunk 1 (__1_0.distcp) (offsets [9223372036854775807] sizes [2]) lies outside the shape [4] in dim 0"},
      {"negative offset", {4}, {Box({-1}, {2}), Box({1}, {3})},
       "chunk 0 (__0_0.distcp) (offsets [-1] sizes [2]) lies outside the shape [4] in dim 0"},
      {"wrong rank", {4, 3}, {Box({0}, {12})},
       "chunk 0 (__0_0.distcp) has 1 offsets and 1 sizes for a shape of 2 dims [4, 3]"},
      {"a scalar twice", {}, {Box({}, {}), Box({}, {})},
       "chunk 0 (__0_0.distcp) (offsets [] sizes []) and chunk 1 (__1_0.distcp) (offsets [] sizes []) overlap"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status s = CheckTiling(c.grid, c.pieces, names);
    CHECK_EQ(s.code(), Code::kCorrupt);
    CHECK_EQ(s.message(), c.message);
  }
}

TEST_CASE("CheckPieceView: the view must lie inside its storage") {
  Piece p = Box({0, 0}, {3, 4});
  p.dtype = torch::DType::kFloat32;
  p.strides = {4, 1};
  p.storage_nbytes = 48;
  CHECK(CheckPieceView(p).ok());
  p.view_offset = 1;
  Status s = CheckPieceView(p);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message(), "a view (offset 1, size [3, 4], stride [4, 1]) reaches byte 52 of a storage of 48 bytes");
  p.view_offset = 0;
  p.strides = {1};
  CHECK_EQ(CheckPieceView(p).code(), Code::kCorrupt);
}

}  // namespace
}  // namespace zerofold::gather

namespace zerofold::gather {
namespace {

TEST_CASE("CheckTiling on thousands of chunks split along dim 1, and one overlap among them") {
  std::vector<Piece> pieces;
  for (int64_t c = 0; c < 4096; ++c) pieces.push_back(Box({0, 4095 - c}, {3, 1}));
  CHECK(CheckTiling(std::vector<int64_t>{3, 4096}, pieces, {}).ok());
  pieces[10] = Box({0, 4000}, {3, 2});  // column 4085 moved to overlap 4000 and 4001
  Status s = CheckTiling(std::vector<int64_t>{3, 4096}, pieces, {});
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message(), "piece 10 (offsets [0, 4000] sizes [3, 2]) and piece 95 (offsets [0, 4000] sizes [3, 1]) overlap");
}

}  // namespace
}  // namespace zerofold::gather
