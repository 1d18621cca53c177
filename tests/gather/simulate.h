// Test helper: what a gather plan's tensor holds, computed without the
// assembler: each grid element in C order taken from the one piece whose
// box holds it, at the piece's view of a storage given as numbers
// (storages[piece.file]). -1 marks an element no piece holds, -2 one two
// pieces hold.
#ifndef ZEROFOLD_TESTS_GATHER_SIMULATE_H_
#define ZEROFOLD_TESTS_GATHER_SIMULATE_H_

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "gather/plan.h"

namespace zerofold::gather::testing {

inline std::vector<int64_t> Simulate(const GatherTensor& t, const std::vector<std::vector<int64_t>>& storages) {
  const size_t rank = t.grid.size();
  const uint64_t numel = NumelOf(t.grid);
  std::vector<int64_t> out(numel, -1);
  std::vector<int64_t> index(rank, 0);
  for (uint64_t flat = 0; flat < numel; ++flat) {
    for (const Piece& p : t.pieces) {
      bool inside = true;
      int64_t at = p.view_offset;
      for (size_t d = 0; d < rank && inside; ++d) {
        inside = p.offsets[d] <= index[d] && index[d] < p.offsets[d] + p.sizes[d];
        at += (index[d] - p.offsets[d]) * p.strides[d];
      }
      if (!inside) continue;
      out[flat] = out[flat] == -1 ? storages[p.file][static_cast<size_t>(at)] : -2;
    }
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < t.grid[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A piece of `file` with box (offsets, sizes) and its view.
inline Piece View(std::vector<int64_t> offsets, std::vector<int64_t> sizes, uint32_t file, int64_t view_offset,
                  std::vector<int64_t> strides) {
  Piece p;
  p.offsets = std::move(offsets);
  p.sizes = std::move(sizes);
  p.file = file;
  p.view_offset = view_offset;
  p.strides = std::move(strides);
  return p;
}

// n numbers from `start`: a storage whose elements name themselves.
inline std::vector<int64_t> Iota(int64_t n, int64_t start) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace zerofold::gather::testing

#endif  // ZEROFOLD_TESTS_GATHER_SIMULATE_H_
