#include "gather/regrid.h"

#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "simulate.h"

namespace zerofold::gather {
namespace {

using testing::Iota;
using testing::Simulate;
using testing::View;

// The brute-force side: a tensor's values in C order and its shape.
struct Dense {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};

std::vector<int64_t> Unravel(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<int64_t>(flat % static_cast<uint64_t>(shape[d]));
    flat /= static_cast<uint64_t>(shape[d]);
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// out[..., i, ...] = in[..., begin + i, ...] along `dim`.
Dense DenseSelect(const Dense& in, size_t dim, int64_t begin, int64_t end) {
  Dense out{in.shape, {}};
  out.shape[dim] = end - begin;
  for (uint64_t f = 0; f < NumelOf(out.shape); ++f) {
    std::vector<int64_t> index = Unravel(f, out.shape);
    index[dim] += begin;
    out.values.push_back(in.values[static_cast<size_t>(Ravel(index, in.shape))]);
  }
  return out;
}

// out[i0, i1, ...] = in[j] with j[perm[k]] = i[k].
Dense DensePermute(const Dense& in, const std::vector<size_t>& perm) {
  Dense out;
  for (size_t p : perm) out.shape.push_back(in.shape[p]);
  for (uint64_t f = 0; f < NumelOf(out.shape); ++f) {
    std::vector<int64_t> index = Unravel(f, out.shape), from(index.size());
    for (size_t k = 0; k < perm.size(); ++k) from[perm[k]] = index[k];
    out.values.push_back(in.values[static_cast<size_t>(Ravel(from, in.shape))]);
  }
  return out;
}



// A [12, 3] tensor in three row blocks [0,5) [5,9) [9,12) (the middle one a
// transposed view of a [3, 4] storage) and a [12, 3] one split by columns.
GatherTensor RowBlocks() {
  GatherTensor t{.name = "row_blocks", .dtype = torch::DType::kFloat32, .shape = {12, 3}, .grid = {12, 3}, .pieces = {}};
  t.pieces = {View({0, 0}, {5, 3}, 0, 2, {3, 1}), View({5, 0}, {4, 3}, 1, 0, {1, 4}), View({9, 0}, {3, 3}, 2, 0, {3, 1})};
  return t;
}
GatherTensor ColumnBlocks() {
  GatherTensor t{.name = "column_blocks", .dtype = torch::DType::kFloat32, .shape = {12, 3}, .grid = {12, 3}, .pieces = {}};
  t.pieces = {View({0, 0}, {12, 2}, 3, 0, {2, 1}), View({0, 2}, {12, 1}, 4, 1, {1, 1})};
  return t;
}
const std::vector<std::vector<int64_t>> kStorages = {Iota(17, 100), Iota(12, 200), Iota(9, 300), Iota(24, 400),
                                                     Iota(13, 500)};

void CheckSame(const GatherTensor& t, const Dense& want) {
  CHECK_EQ(t.grid, want.shape);
  CHECK(CheckTiling(t.grid, t.pieces, {}).ok());
  CHECK_EQ(Simulate(t, kStorages), want.values);
}

TEST_CASE("RefineGrid splits boxes at factor boundaries and keeps the elements") {
  for (const GatherTensor& t : {RowBlocks(), ColumnBlocks()}) {
    const Dense whole{t.grid, Simulate(t, kStorages)};
    for (const std::vector<int64_t>& f : std::vector<std::vector<int64_t>>{{12}, {2, 6}, {3, 4}, {4, 3}, {2, 3, 2}}) {
      CAPTURE(f.size());
      Result<GatherTensor> r = RefineGrid(t, 0, f);
      REQUIRE_MESSAGE(r.ok(), r.status().ToString());
      std::vector<int64_t> grid = f;
      grid.push_back(3);
      CheckSame(*r, Dense{grid, whole.values});
      CHECK_EQ(r->shape, t.shape);
    }
  }
  // Rows [0, 5) of [3, 4] factors: a whole block and a partial row.
  Result<GatherTensor> r = RefineGrid(RowBlocks(), 0, std::vector<int64_t>{3, 4});
  REQUIRE(r.ok());
  CHECK_GE(r->pieces.size(), 5u);
  CHECK_FALSE(RefineGrid(RowBlocks(), 0, std::vector<int64_t>{5, 2}).ok());
  CHECK_FALSE(RefineGrid(RowBlocks(), 2, std::vector<int64_t>{3}).ok());
}

TEST_CASE("RefineGrid, SelectRange and PermuteGrid composed equal the dense index math") {
  for (const GatherTensor& t : {RowBlocks(), ColumnBlocks()}) {
    const Dense whole{t.grid, Simulate(t, kStorages)};
    // Megatron's qkv per query group: rows [groups=2][q 4, k 1, v 1] -> k rows.
    Result<GatherTensor> g = RefineGrid(t, 0, std::vector<int64_t>{2, 6});
    REQUIRE(g.ok());
    Dense dg{{2, 6, 3}, whole.values};
    for (auto [b, e] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 5}, {5, 6}, {1, 5}, {3, 3}}) {
      Result<GatherTensor> s = SelectRange(*g, 1, b, e);
      REQUIRE(s.ok());
      CheckSame(*s, DenseSelect(dg, 1, b, e));
      Result<GatherTensor> flat = Reshape(*s, {2 * (e - b), 3});
      REQUIRE(flat.ok());
      CHECK_EQ(flat->shape, std::vector<int64_t>{2 * (e - b), 3});
    }
    // RoPE's interleaved -> half layout: [heads 2][half 3][2] -> [2][2][3].
    Result<GatherTensor> r = RefineGrid(t, 0, std::vector<int64_t>{2, 3, 2});
    REQUIRE(r.ok());
    const std::vector<size_t> perm = {0, 2, 1, 3};
    Result<GatherTensor> p = PermuteGrid(*r, perm);
    REQUIRE(p.ok());
    CheckSame(*p, DensePermute(Dense{{2, 3, 2, 3}, whole.values}, perm));
    // A full transpose, then a column range of it.
    const std::vector<size_t> swap = {1, 0};
    Result<GatherTensor> tr = PermuteGrid(t, swap);
    REQUIRE(tr.ok());
    const Dense dt = DensePermute(whole, swap);
    CheckSame(*tr, dt);
    Result<GatherTensor> cut = SelectRange(*tr, 1, 4, 10);
    REQUIRE(cut.ok());
    CheckSame(*cut, DenseSelect(dt, 1, 4, 10));
  }
  CHECK_FALSE(SelectRange(RowBlocks(), 0, 3, 13).ok());
  CHECK_FALSE(PermuteGrid(RowBlocks(), std::vector<size_t>{0, 0}).ok());
  CHECK_FALSE(Reshape(RowBlocks(), {5, 7}).ok());
}

TEST_CASE("ConcatGrid0 stacks parts along grid dim 0") {
  Result<GatherTensor> a = SelectRange(RowBlocks(), 0, 2, 7);
  Result<GatherTensor> b = SelectRange(ColumnBlocks(), 0, 0, 4);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const std::vector<GatherTensor> parts = {*a, *b, *a};
  Result<GatherTensor> c = ConcatGrid0(parts, "cat");
  REQUIRE(c.ok());
  CHECK_EQ(c->name, "cat");
  std::vector<int64_t> want = Simulate(*a, kStorages);
  for (int64_t v : Simulate(*b, kStorages)) want.push_back(v);
  for (int64_t v : Simulate(*a, kStorages)) want.push_back(v);
  CheckSame(*c, Dense{{14, 3}, want});
  Result<GatherTensor> wide = SelectRange(RowBlocks(), 1, 0, 2);
  REQUIRE(wide.ok());
  const std::vector<GatherTensor> mismatched = {*a, *wide};
  CHECK_FALSE(ConcatGrid0(mismatched, "bad").ok());
}

}  // namespace
}  // namespace zerofold::gather
