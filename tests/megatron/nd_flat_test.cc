#include "megatron/nd_flat.h"

#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "../gather/simulate.h"
#include "gather/plan.h"

namespace zerofold::megatron {
namespace {

using gather::testing::Simulate;

// A [X, Y] tensor whose values are their C-order index, sharded by an
// F0 x F1 grid, each block flattened and split into `cut` (start of the
// second part; 0 = one part) as Megatron-Core's N-D flattening stores it:
// a chunk per (block, part), each its own storage holding its elements.
struct Stored {
  gather::GatherTensor tensor;
  std::vector<std::vector<int64_t>> storages;
};

Stored Flatten(int64_t x, int64_t y, int64_t f0, int64_t f1, int64_t cut) {
  const int64_t l0 = x / f0, l1 = y / f1;
  Stored s;
  s.tensor.name = "optimizer.state.exp_avg.w";
  s.tensor.shape = s.tensor.grid = {f0, f1, l0 * l1};
  for (int64_t a = 0; a < f0; ++a) {
    for (int64_t b = 0; b < f1; ++b) {
      std::vector<int64_t> block;  // the block's elements in its C order
      for (int64_t i = 0; i < l0; ++i)
        for (int64_t j = 0; j < l1; ++j) block.push_back((a * l0 + i) * y + b * l1 + j);
      std::vector<int64_t> starts = {0};
      if (cut > 0) starts.push_back(cut);
      for (size_t k = 0; k < starts.size(); ++k) {
        const int64_t end = k + 1 < starts.size() ? starts[k + 1] : l0 * l1;
        gather::Piece p;
        p.offsets = {a, b, starts[k]};
        p.sizes = {1, 1, end - starts[k]};
        p.strides = {end - starts[k], end - starts[k], 1};
        p.file = static_cast<uint32_t>(s.storages.size());
        s.storages.emplace_back(block.begin() + starts[k], block.begin() + end);
        s.tensor.pieces.push_back(p);
      }
    }
  }
  return s;
}

TEST_CASE("Unflatten: blocks split anywhere come back in C order of the original shape") {
  struct Case {
    int64_t x, y, f0, f1, cut;
  } cases[] = {{16, 8, 2, 1, 40}, {16, 8, 2, 1, 0}, {6, 10, 3, 2, 7}, {4, 6, 1, 3, 1}, {8, 8, 2, 2, 15}};
  for (const Case& c : cases) {
    CAPTURE(c.x);
    CAPTURE(c.f1);
    CAPTURE(c.cut);
    Stored s = Flatten(c.x, c.y, c.f0, c.f1, c.cut);
    REQUIRE(gather::CheckTiling(s.tensor.grid, s.tensor.pieces, {}).ok());
    const std::vector<int64_t> original = {c.x, c.y};
    Result<gather::GatherTensor> t = Unflatten(s.tensor, original);
    REQUIRE_MESSAGE(t.ok(), t.status().ToString());
    CHECK_EQ(t->shape, original);
    CHECK_EQ(t->grid, std::vector<int64_t>{c.f0, c.x / c.f0, c.f1, c.y / c.f1});
    CHECK(gather::CheckTiling(t->grid, t->pieces, {}).ok());
    std::vector<int64_t> want(static_cast<size_t>(c.x * c.y));
    std::iota(want.begin(), want.end(), 0);
    CHECK_EQ(Simulate(*t, s.storages), want);
  }
}

TEST_CASE("Unflatten: a stored shape that does not fit the original one is corrupt") {
  Stored s = Flatten(16, 8, 2, 1, 40);
  struct Case {
    std::vector<int64_t> original;
    const char* why;
  } cases[] = {
      {{16, 8, 1}, "not one dim more than the original"},
      {{15, 8}, "dim 0 is not split into equal blocks"},
      {{16, 4}, "a block holds 32 elements"},
  };
  for (const Case& c : cases) {
    Status st = Unflatten(s.tensor, c.original).status();
    CHECK_EQ(st.code(), Code::kCorrupt);
    CHECK_NE(st.message().find(c.why), std::string::npos);
  }
  s.tensor.pieces[0].sizes = {2, 1, 40};
  Status st = Unflatten(s.tensor, std::vector<int64_t>{16, 8}).status();
  CHECK_EQ(st.code(), Code::kCorrupt);
  CHECK_NE(st.message().find("spans several blocks"), std::string::npos);
}

}  // namespace
}  // namespace zerofold::megatron
