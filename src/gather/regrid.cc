#include "gather/regrid.h"

#include <algorithm>
#include <utility>

#include "gather/slice.h"
#include "torch/checkpoint.h"

namespace zerofold::gather {

namespace {

Status Bad(const GatherTensor& t, const std::string& what) {
  return Status::Internal(what + " of " + t.name + ", a tensor of grid " + torch::ShapeText(t.grid));
}

template <typename V>
void Splice(V* v, size_t at, const V& with) {
  v->erase(v->begin() + static_cast<std::ptrdiff_t>(at));
  v->insert(v->begin() + static_cast<std::ptrdiff_t>(at), with.begin(), with.end());
}

}  // namespace

Result<GatherTensor> RefineGrid(const GatherTensor& t, size_t dim, std::span<const int64_t> factors) {
  if (dim >= t.grid.size()) return Bad(t, "refine dim " + std::to_string(dim));
  int64_t product = 1;
  for (int64_t f : factors) {
    if (f < 1) return Bad(t, "refine by a factor " + std::to_string(f));
    product *= f;
  }
  if (factors.empty() || product != t.grid[dim])
    return Bad(t, "refine dim " + std::to_string(dim) + " into " + torch::ShapeText(factors));
  const std::vector<int64_t> shape(factors.begin(), factors.end());
  // Stride multiplier of each factor: the product of the factors after it.
  std::vector<int64_t> inner(shape.size(), 1);
  for (size_t i = shape.size() - 1; i-- > 0;) inner[i] = inner[i + 1] * shape[i + 1];
  GatherTensor out = t;
  out.pieces.clear();
  Splice(&out.grid, dim, shape);
  for (const Piece& p : t.pieces) {
    const int64_t from = p.offsets[dim];
    for (const Box& b : FlatRangeBoxes(shape, from, from + p.sizes[dim])) {
      Piece q = p;
      int64_t first = 0;  // the box's first index of the refined dim
      std::vector<int64_t> strides(shape.size());
      for (size_t i = 0; i < shape.size(); ++i) {
        first += b.offsets[i] * inner[i];
        strides[i] = p.strides[dim] * inner[i];
      }
      q.view_offset += (first - from) * p.strides[dim];
      Splice(&q.offsets, dim, b.offsets);
      Splice(&q.sizes, dim, b.sizes);
      Splice(&q.strides, dim, strides);
      out.pieces.push_back(std::move(q));
    }
  }
  return out;
}

Result<GatherTensor> SelectRange(const GatherTensor& t, size_t dim, int64_t begin, int64_t end) {
  if (dim >= t.grid.size() || begin < 0 || end < begin || end > t.grid[dim])
    return Bad(t, "select [" + std::to_string(begin) + ", " + std::to_string(end) + ") of dim " + std::to_string(dim));
  GatherTensor out = t;
  out.pieces.clear();
  out.grid[dim] = end - begin;
  for (const Piece& p : t.pieces) {
    const int64_t lo = std::max(p.offsets[dim], begin), hi = std::min(p.offsets[dim] + p.sizes[dim], end);
    if (lo >= hi) continue;
    Piece q = p;
    q.view_offset += (lo - p.offsets[dim]) * p.strides[dim];
    q.offsets[dim] = lo - begin;
    q.sizes[dim] = hi - lo;
    out.pieces.push_back(std::move(q));
  }
  out.shape = out.grid;
  return out;
}

Result<GatherTensor> PermuteGrid(const GatherTensor& t, std::span<const size_t> perm) {
  std::vector<bool> seen(t.grid.size(), false);
  bool ok = perm.size() == t.grid.size();
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] < seen.size() && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  if (!ok) return Bad(t, "a permutation of " + std::to_string(perm.size()) + " dims");
  auto permuted = [&](const std::vector<int64_t>& v) {
    std::vector<int64_t> w(v.size());
    for (size_t i = 0; i < perm.size(); ++i) w[i] = v[perm[i]];
    return w;
  };
  GatherTensor out = t;
  out.grid = permuted(t.grid);
  out.shape = out.grid;
  for (Piece& p : out.pieces) {
    p.offsets = permuted(p.offsets);
    p.sizes = permuted(p.sizes);
    p.strides = permuted(p.strides);
  }
  return out;
}

Result<GatherTensor> ConcatGrid0(std::span<const GatherTensor> parts, std::string name) {
  if (parts.empty()) return Status::Internal("concatenation of no tensors into " + name);
  GatherTensor out;
  out.name = std::move(name);
  out.dtype = parts[0].dtype;
  out.grid = parts[0].grid;
  if (out.grid.empty()) return Bad(parts[0], "concatenate a scalar into " + out.name);
  out.grid[0] = 0;
  for (const GatherTensor& part : parts) {
    if (part.dtype != out.dtype || part.grid.size() != out.grid.size() ||
        !std::equal(part.grid.begin() + 1, part.grid.end(), out.grid.begin() + 1))
      return Bad(part, "concatenate along dim 0 with " + parts[0].name);
    for (Piece p : part.pieces) {
      p.offsets[0] += out.grid[0];
      out.pieces.push_back(std::move(p));
    }
    out.grid[0] += part.grid[0];
  }
  out.shape = out.grid;
  return out;
}

Result<GatherTensor> Reshape(const GatherTensor& t, std::vector<int64_t> shape) {
  for (int64_t s : shape)
    if (s < 0) return Bad(t, "reshape to " + torch::ShapeText(shape));
  if (NumelOf(shape) != NumelOf(t.grid)) return Bad(t, "reshape to " + torch::ShapeText(shape));
  GatherTensor out = t;
  out.shape = std::move(shape);
  return out;
}

}  // namespace zerofold::gather
