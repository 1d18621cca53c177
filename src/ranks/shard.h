// Where a DTensor's local shard lies in its global tensor: the box of the
// global shape a rank holds, from the device mesh's shape, the rank's
// coordinates on it and the placements (one per mesh dim), with
// torch.chunk's semantics: a dim of size S split n ways gives chunks of
// ceil(S / n) elements, the last ones shorter or empty (torch 2.6
// Shard._local_shard_size_on_dim). Pure arithmetic: no file is read.
#ifndef ZEROFOLD_RANKS_SHARD_H_
#define ZEROFOLD_RANKS_SHARD_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerofold/result.h"

namespace zerofold::ranks {

enum class PlacementKind : uint8_t {
  kShard,         // Shard(dim)
  kStridedShard,  // _StridedShard(dim, split_factor): FSDP2 over a TP-sharded dim
  kReplicate,     // Replicate()
  kPartial,       // Partial(reduce_op): pending reduction, not mergeable
};

struct Placement {
  PlacementKind kind = PlacementKind::kReplicate;
  int64_t dim = 0;           // kShard, kStridedShard
  int64_t split_factor = 1;  // kStridedShard
  bool operator==(const Placement&) const = default;
};

// "Shard(0)", "_StridedShard(0, 2)", "Replicate()", "Partial()": as torch prints them.
std::string PlacementText(const Placement& p);
// "(Shard(0), Replicate())".
std::string PlacementsText(std::span<const Placement> placements);

// Chunk `index` of torch.chunk(range(size), n): its first element and
// length (0 past the chunks torch.chunk returns). REQUIRES: size >= 0,
// n >= 1, 0 <= index < n.
struct Span {
  int64_t offset = 0;
  int64_t size = 0;
};
Span ChunkOf(int64_t size, int64_t n, int64_t index);

// The box (offsets, sizes per dim of `global_shape`) a rank at `coords`
// of a mesh of `mesh_shape` holds under `placements`. Each tensor dim is
// split by the mesh dims that shard it: Shard(d) dims in mesh order, then
// _StridedShard(d) dims in mesh order (FSDP2 shards what TP already
// sharded: _StridedShard(d, k) on the dp dim names k shards made before it,
// so its split comes after theirs), each split chunking the previous one.
// Replicate leaves the box as it is. Errors: kCorrupt for counts that
// disagree (placements, coordinates, mesh dims), a coordinate outside its
// mesh dim, a shard dim outside the tensor, a negative size;
// kUnsupported for Partial (a pending sum: no rank holds the value) and
// for a _StridedShard whose split_factor is not the product of the mesh
// dims splitting its dim before it (a layout torch itself does not
// compute offsets for).
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
  bool empty() const;
  bool operator==(const Box&) const = default;
};
Result<Box> LocalBox(std::span<const int64_t> global_shape, std::span<const int64_t> mesh_shape,
                     std::span<const int64_t> coords, std::span<const Placement> placements);

}  // namespace zerofold::ranks

#endif  // ZEROFOLD_RANKS_SHARD_H_
