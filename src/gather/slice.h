// Gather-plan math that reshapes what a plan reads without reading it:
// a tensor's sub-tensor at one index of axis 0 (its pieces clipped, their
// views moved), and a flat element range of a shape as boxes. Pure.
#ifndef ZEROFOLD_GATHER_SLICE_H_
#define ZEROFOLD_GATHER_SLICE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "zerofold/result.h"

namespace zerofold::gather {

// t[index] as a tensor of its own named `name`: shape t.shape[1:], and the
// pieces of t that hold elements of it, clipped to them, views moved to
// their first element. Axis 0 of the shape must be the product of the
// grid's first k dims for some k >= 1 (grid == shape, or a grid that
// splits axis 0 into blocks); the slice's grid is the grid's dims from k.
// Slices at different indexes read disjoint bytes. kInternal for a tensor
// of rank 0, an index outside axis 0 or a grid that does not split axis 0.
Result<GatherTensor> SliceAxis0(const GatherTensor& t, int64_t index, std::string name);

// A box of a shape: offsets and sizes per dim.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
};

// Elements [begin, end) of `shape` in C order as boxes, in C order: at most
// 2 * rank - 1 of them (the partial rows up to a boundary of every dim,
// the whole blocks between, the partial rows after). Empty when begin ==
// end. REQUIRES: 0 <= begin <= end <= numel(shape).
std::vector<Box> FlatRangeBoxes(std::span<const int64_t> shape, int64_t begin, int64_t end);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_SLICE_H_
