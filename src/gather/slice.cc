#include "gather/slice.h"

#include <utility>

#include "torch/checkpoint.h"

namespace zerofold::gather {

namespace {

// Appends the boxes of elements [begin, end) of the block of `shape`'s dims
// from `dim` on at the fixed leading indexes `lead` (one per dim before).
void SplitRange(std::span<const int64_t> shape, size_t dim, std::vector<int64_t>& lead, int64_t begin, int64_t end,
                std::vector<Box>* out) {
  if (begin == end) return;
  const size_t rank = shape.size();
  if (dim == rank) {  // one element, all of its indexes fixed
    out->push_back(Box{lead, std::vector<int64_t>(rank, 1)});
    return;
  }
  int64_t row = 1;  // elements per index of `dim`
  for (size_t d = dim + 1; d < rank; ++d) row *= shape[d];
  const int64_t first = begin / row, first_at = begin % row;
  const int64_t last = end / row, last_at = end % row;
  auto partial = [&](int64_t index, int64_t from, int64_t to) {
    lead.push_back(index);
    SplitRange(shape, dim + 1, lead, from, to, out);
    lead.pop_back();
  };
  if (first == last) return partial(first, first_at, last_at);
  int64_t whole = first;
  if (first_at != 0) {
    partial(first, first_at, row);
    ++whole;
  }
  if (last > whole) {
    Box b{lead, std::vector<int64_t>(dim, 1)};
    b.offsets.push_back(whole);
    b.sizes.push_back(last - whole);
    for (size_t d = dim + 1; d < rank; ++d) {
      b.offsets.push_back(0);
      b.sizes.push_back(shape[d]);
    }
    out->push_back(std::move(b));
  }
  if (last_at != 0) partial(last, 0, last_at);
}

}  // namespace

Result<GatherTensor> SliceAxis0(const GatherTensor& t, int64_t index, std::string name) {
  if (t.shape.empty() || index < 0 || index >= t.shape[0])
    return Status::Internal("slice " + std::to_string(index) + " of " + t.name + ", a tensor of shape " +
                            torch::ShapeText(t.shape));
  // The grid's dims that make up axis 0.
  size_t k = 0;
  int64_t product = 1;
  while (k < t.grid.size() && (k == 0 || product < t.shape[0])) product *= t.grid[k++];
  if (product != t.shape[0])
    return Status::Internal("the grid " + torch::ShapeText(t.grid) + " of " + t.name + " does not split axis 0 of " +
                            torch::ShapeText(t.shape));
  std::vector<int64_t> digit(k);
  for (size_t d = k, rest = static_cast<size_t>(index); d-- > 0;) {
    digit[d] = static_cast<int64_t>(rest % static_cast<size_t>(t.grid[d]));
    rest /= static_cast<size_t>(t.grid[d]);
  }
  GatherTensor out;
  out.name = std::move(name);
  out.dtype = t.dtype;
  out.shape.assign(t.shape.begin() + 1, t.shape.end());
  out.grid.assign(t.grid.begin() + static_cast<std::ptrdiff_t>(k), t.grid.end());
  for (const Piece& p : t.pieces) {
    bool holds = true;
    int64_t moved = 0;
    for (size_t d = 0; d < k && holds; ++d) {
      holds = p.offsets[d] <= digit[d] && digit[d] < p.offsets[d] + p.sizes[d];
      moved += (digit[d] - p.offsets[d]) * p.strides[d];
    }
    if (!holds) continue;
    Piece q = p;
    q.view_offset += moved;
    q.offsets.erase(q.offsets.begin(), q.offsets.begin() + static_cast<std::ptrdiff_t>(k));
    q.sizes.erase(q.sizes.begin(), q.sizes.begin() + static_cast<std::ptrdiff_t>(k));
    q.strides.erase(q.strides.begin(), q.strides.begin() + static_cast<std::ptrdiff_t>(k));
    out.pieces.push_back(std::move(q));
  }
  return out;
}

std::vector<Box> FlatRangeBoxes(std::span<const int64_t> shape, int64_t begin, int64_t end) {
  std::vector<Box> out;
  std::vector<int64_t> lead;
  SplitRange(shape, 0, lead, begin, end, &out);
  return out;
}

}  // namespace zerofold::gather
