#include "gather/slice.h"

#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "simulate.h"
#include "torch/state_dict.h"

namespace zerofold::gather {
namespace {

using testing::Iota;
using testing::Simulate;
using testing::View;



TEST_CASE("SliceAxis0: each slice of a [3, 4, 2] tensor tiled 2 x 2 equals that slice of the whole") {
  // Storages: file f holds its piece's elements in C order (a transposed
  // view for piece 3, whose storage is [2][2][2] with axes 0 and 2 swapped).
  GatherTensor t;
  t.name = "decoder.layers.w";
  t.shape = t.grid = {3, 4, 2};
  t.pieces = {View({0, 0, 0}, {2, 2, 2}, 0, 0, {4, 2, 1}), View({0, 2, 0}, {2, 2, 2}, 1, 3, {4, 2, 1}),
              View({2, 0, 0}, {1, 2, 2}, 2, 0, {4, 2, 1}), View({2, 2, 0}, {1, 2, 2}, 3, 0, {1, 2, 4})};
  const std::vector<std::vector<int64_t>> storages = {Iota(8, 100), Iota(11, 200), Iota(4, 300), Iota(8, 400)};
  REQUIRE(CheckTiling(t.grid, t.pieces, {}).ok());
  const std::vector<int64_t> whole = Simulate(t, storages);
  for (int64_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    Result<GatherTensor> s = SliceAxis0(t, i, "decoder.layers." + std::to_string(i) + ".w");
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK_EQ(s->name, "decoder.layers." + std::to_string(i) + ".w");
    CHECK_EQ(s->shape, std::vector<int64_t>{4, 2});
    CHECK_EQ(s->grid, std::vector<int64_t>{4, 2});
    CHECK_EQ(s->pieces.size(), 2u);
    CHECK(CheckTiling(s->grid, s->pieces, {}).ok());
    for (const Piece& p : s->pieces) CHECK(CheckPieceView([&] { Piece q = p; q.storage_nbytes = 1 << 20; return q; }()).ok());
    const std::vector<int64_t> want(whole.begin() + i * 8, whole.begin() + (i + 1) * 8);
    CHECK_EQ(Simulate(*s, storages), want);
  }
}

TEST_CASE("SliceAxis0: a grid that splits axis 0 in blocks [2, 3] for a shape [6, 2]") {
  GatherTensor t;
  t.name = "x";
  t.shape = {6, 2};
  t.grid = {2, 3, 2};
  // Block 0 rows 0-2 in file 0; block 1 rows 3-4 in file 1, row 5 in file 2.
  t.pieces = {View({0, 0, 0}, {1, 3, 2}, 0, 0, {0, 2, 1}), View({1, 0, 0}, {1, 2, 2}, 1, 0, {0, 2, 1}),
              View({1, 2, 0}, {1, 1, 2}, 2, 1, {0, 2, 1})};
  const std::vector<std::vector<int64_t>> storages = {Iota(6, 0), Iota(4, 6), Iota(3, 9)};
  const std::vector<int64_t> whole = Simulate(t, storages);
  CHECK_EQ(whole, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  for (int64_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    Result<GatherTensor> s = SliceAxis0(t, i, "x");
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK_EQ(s->grid, std::vector<int64_t>{2});
    CHECK_EQ(s->pieces.size(), 1u);
    CHECK_EQ(Simulate(*s, storages), std::vector<int64_t>{whole[2 * i], whole[2 * i + 1]});
  }
}

TEST_CASE("SliceAxis0 refuses a scalar, an index outside axis 0 and a grid that does not split it") {
  GatherTensor scalar;
  scalar.name = "s";
  CHECK_EQ(SliceAxis0(scalar, 0, "s").status().code(), Code::kInternal);
  GatherTensor t;
  t.name = "t";
  t.shape = {4, 3};
  t.grid = {4, 3};
  CHECK_EQ(SliceAxis0(t, 4, "t").status().code(), Code::kInternal);
  CHECK_EQ(SliceAxis0(t, -1, "t").status().code(), Code::kInternal);
  t.grid = {12};  // a flattened grid (ZeRO's)
  Status s = SliceAxis0(t, 0, "t").status();
  CHECK_EQ(s.code(), Code::kInternal);
  CHECK_EQ(s.message(), "the grid [12] of t does not split axis 0 of [4, 3]");
}

TEST_CASE("FlatRangeBoxes: every range of a [3, 4, 5] shape, boxes in C order covering it exactly") {
  const std::vector<int64_t> shape = {3, 4, 5};
  const std::vector<int64_t> strides = torch::ContiguousStrides(shape);
  for (int64_t begin = 0; begin <= 60; ++begin) {
    for (int64_t end = begin; end <= 60; ++end) {
      CAPTURE(begin);
      CAPTURE(end);
      std::vector<Box> boxes = FlatRangeBoxes(shape, begin, end);
      CHECK_LE(boxes.size(), 5u);
      std::vector<int64_t> covered;
      for (const Box& b : boxes) {
        REQUIRE_EQ(b.offsets.size(), 3u);
        for (int64_t i = 0; i < b.sizes[0]; ++i)
          for (int64_t j = 0; j < b.sizes[1]; ++j)
            for (int64_t k = 0; k < b.sizes[2]; ++k)
              covered.push_back((b.offsets[0] + i) * strides[0] + (b.offsets[1] + j) * strides[1] + b.offsets[2] + k);
      }
      CHECK_EQ(covered, Iota(end - begin, begin));
    }
  }
  CHECK(FlatRangeBoxes({}, 0, 0).empty());
  REQUIRE_EQ(FlatRangeBoxes({}, 0, 1).size(), 1u);
}

}  // namespace
}  // namespace zerofold::gather
