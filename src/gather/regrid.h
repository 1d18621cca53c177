// Gather-plan transforms that move, cut and reorder what a tensor's pieces
// hold without reading a byte: the building blocks of a name mapping such
// as `merge --hf` (hfexport/), each a pure function of a GatherTensor.
//
// Every transform keeps the plan's contract (gather/plan.h): the pieces
// tile the grid, and each piece's box, in its C order, is a strided view of
// its storage. What they do to the tensor's elements, in the grid's C
// order (which is the tensor's C order):
//   RefineGrid    none: one grid dim becomes several (its index in mixed
//                 radix); a box that straddles a factor's boundary becomes
//                 several boxes (as FlatRangeBoxes splits a range).
//   SelectRange   keeps indexes [begin, end) of one grid dim.
//   PermuteGrid   reorders the grid dims (a transpose of the grid).
//   ConcatGrid0   appends tensors along grid dim 0.
//   Reshape       none: sets the shape (the grid is unchanged).
// Transforms that change which elements the tensor holds or their order
// (SelectRange, PermuteGrid, ConcatGrid0) set the shape to the new grid;
// Reshape then gives it the shape wanted.
//
// Errors are kInternal (a caller's plan, never a user's input, is wrong):
// a dim outside the grid, factors whose product is not the dim's size, a
// range outside it, a permutation that is none, parts whose grids differ
// past dim 0 or whose dtypes differ, a shape of another numel.
#ifndef ZEROFOLD_GATHER_REGRID_H_
#define ZEROFOLD_GATHER_REGRID_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "zerofold/result.h"

namespace zerofold::gather {

// Grid dim `dim` (of size n) becomes dims `factors` (product n, each >= 1).
Result<GatherTensor> RefineGrid(const GatherTensor& t, size_t dim, std::span<const int64_t> factors);

// Indexes [begin, end) of grid dim `dim`: pieces clipped (offsets rebased,
// views moved to the first element kept), pieces outside dropped.
// Empty ranges are allowed (a tensor of no elements and no pieces).
Result<GatherTensor> SelectRange(const GatherTensor& t, size_t dim, int64_t begin, int64_t end);

// Grid dim i of the result is dim perm[i] of t's grid: boxes and strides
// permuted alike (the piece reader reads the resulting strided views).
Result<GatherTensor> PermuteGrid(const GatherTensor& t, std::span<const size_t> perm);

// parts[0], parts[1], ... along grid dim 0, named `name`: every part's grid
// the same past dim 0, the same output dtype. Pieces keep their files (the
// parts are tensors of one GatherPlan).
Result<GatherTensor> ConcatGrid0(std::span<const GatherTensor> parts, std::string name);

// t with shape `shape` (numel unchanged).
Result<GatherTensor> Reshape(const GatherTensor& t, std::vector<int64_t> shape);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_REGRID_H_
