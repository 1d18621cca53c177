#include "ranks/shard.h"

#include <algorithm>
#include <string>

namespace zerofold::ranks {

std::string PlacementText(const Placement& p) {
  switch (p.kind) {
    case PlacementKind::kShard: return "Shard(" + std::to_string(p.dim) + ")";
    case PlacementKind::kStridedShard:
      return "_StridedShard(" + std::to_string(p.dim) + ", " + std::to_string(p.split_factor) + ")";
    case PlacementKind::kReplicate: return "Replicate()";
    case PlacementKind::kPartial: return "Partial()";
  }
  return "?";
}

std::string PlacementsText(std::span<const Placement> placements) {
  std::string out = "(";
  for (size_t i = 0; i < placements.size(); ++i) out += (i ? ", " : "") + PlacementText(placements[i]);
  return out + ")";
}

Span ChunkOf(int64_t size, int64_t n, int64_t index) {
  const int64_t full = size / n + (size % n != 0 ? 1 : 0);  // ceil without overflow
  if (full == 0 || index >= (size + full - 1) / full) return {size, 0};
  const int64_t begin = full * index;
  return {begin, std::min(full, size - begin)};
}

bool Box::empty() const {
  for (int64_t s : sizes)
    if (s == 0) return true;
  return false;
}

Result<Box> LocalBox(std::span<const int64_t> global_shape, std::span<const int64_t> mesh_shape,
                     std::span<const int64_t> coords, std::span<const Placement> placements) {
  if (placements.size() != mesh_shape.size() || coords.size() != mesh_shape.size())
    return Status::Corrupt(std::to_string(placements.size()) + " placements and " + std::to_string(coords.size()) +
                           " coordinates on a " + std::to_string(mesh_shape.size()) + "-D device mesh");
  const int64_t rank = static_cast<int64_t>(global_shape.size());
  for (int64_t s : global_shape)
    if (s < 0) return Status::Corrupt("negative size in shape");
  for (size_t i = 0; i < mesh_shape.size(); ++i) {
    if (mesh_shape[i] < 1 || coords[i] < 0 || coords[i] >= mesh_shape[i])
      return Status::Corrupt("coordinate " + std::to_string(coords[i]) + " on mesh dim " + std::to_string(i) +
                             " of size " + std::to_string(mesh_shape[i]));
    const Placement& p = placements[i];
    if (p.kind == PlacementKind::kPartial)
      return Status::Unsupported("placement Partial() on mesh dim " + std::to_string(i) +
                                 ": a pending reduction, no rank holds the value");
    if ((p.kind == PlacementKind::kShard || p.kind == PlacementKind::kStridedShard) && (p.dim < 0 || p.dim >= rank))
      return Status::Corrupt(PlacementText(p) + " of a " + std::to_string(rank) + "-D tensor");
  }
  Box box{std::vector<int64_t>(global_shape.size(), 0),
          std::vector<int64_t>(global_shape.begin(), global_shape.end())};
  for (int64_t d = 0; d < rank; ++d) {
    std::vector<size_t> order;
    for (PlacementKind kind : {PlacementKind::kShard, PlacementKind::kStridedShard})
      for (size_t i = 0; i < placements.size(); ++i)
        if (placements[i].kind == kind && placements[i].dim == d) order.push_back(i);
    int64_t splits_before = 1;
    for (size_t i : order) {
      if (placements[i].kind == PlacementKind::kStridedShard && placements[i].split_factor != splits_before)
        return Status::Unsupported(PlacementsText(placements) + ": " + PlacementText(placements[i]) + " after " +
                                   std::to_string(splits_before) + " shard(s) of dim " + std::to_string(d) +
                                   " (only FSDP2 over TP's layout is read)");
      const Span c = ChunkOf(box.sizes[d], mesh_shape[i], coords[i]);
      box.offsets[d] += c.offset;
      box.sizes[d] = c.size;
      splits_before *= mesh_shape[i];
    }
  }
  return box;
}

}  // namespace zerofold::ranks
