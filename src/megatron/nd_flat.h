// Megatron-Core's N-D flattened tensors (`flattened_range`, core <= 0.15,
// the distributed optimizer's fully_sharded_model_space form) put back
// into their original shape, as a transform of their gather plan.
//
// Such a tensor of original shape [X0, ..., Xn-1] is stored with the
// global shape [F0, ..., Fn-1, P]: Fi blocks along dim i (the grid of the
// model's own sharding), each block of local shape [l0, ..., ln-1]
// (li = Xi / Fi) flattened to P = l0 * ... * ln-1 elements; a chunk at
// (f0, ..., fn-1, start) of sizes (1, ..., 1, len) holds elements
// [start, start + len) of block f. mcore_data records the original shape
// (`nd_reformulated_orig_global_shape`, strategies/torch.py). The original
// tensor in C order is the grid [F0, l0, F1, l1, ..., Fn-1, ln-1] in C
// order, so each chunk becomes at most 2n - 1 boxes of that grid
// (gather::FlatRangeBoxes), each a view of the chunk's bytes: nothing is
// read twice or copied.
#ifndef ZEROFOLD_MEGATRON_ND_FLAT_H_
#define ZEROFOLD_MEGATRON_ND_FLAT_H_

#include <cstdint>
#include <span>

#include "gather/plan.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

// `stored` (grid = its stored shape, pieces tiling it) as a tensor of
// shape `original`. kCorrupt (the caller adds key and path) when the
// stored shape is not [F..., P] for `original` (a rank other than
// original's + 1, an Fi that does not divide Xi, P != the block's
// elements) or a chunk spans more than one block.
Result<gather::GatherTensor> Unflatten(const gather::GatherTensor& stored, std::span<const int64_t> original);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_ND_FLAT_H_
