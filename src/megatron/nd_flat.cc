#include "megatron/nd_flat.h"

#include <string>
#include <utility>
#include <vector>

#include "gather/slice.h"
#include "torch/checkpoint.h"
#include "torch/state_dict.h"

namespace zerofold::megatron {

Result<gather::GatherTensor> Unflatten(const gather::GatherTensor& stored, std::span<const int64_t> original) {
  const size_t n = original.size();
  auto bad = [&](const std::string& why) {
    return Status::Corrupt("stored as " + torch::ShapeText(stored.shape) + " for the original shape " +
                           torch::ShapeText(original) + " (nd_reformulated_orig_global_shape): " + why);
  };
  if (stored.shape.size() != n + 1) return bad("not one dim more than the original");
  std::vector<int64_t> local(n);
  int64_t block = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t f = stored.shape[i];
    if (f <= 0 || original[i] % f != 0) return bad("dim " + std::to_string(i) + " is not split into equal blocks");
    local[i] = original[i] / f;
    block *= local[i];
  }
  if (block != stored.shape[n]) return bad("a block holds " + std::to_string(block) + " elements");
  const std::vector<int64_t> local_strides = torch::ContiguousStrides(local);

  gather::GatherTensor t;
  t.name = stored.name;
  t.dtype = stored.dtype;
  t.shape.assign(original.begin(), original.end());
  for (size_t i = 0; i < n; ++i) {
    t.grid.push_back(stored.shape[i]);
    t.grid.push_back(local[i]);
  }
  for (const gather::Piece& p : stored.pieces) {
    for (size_t i = 0; i < n; ++i)
      if (p.sizes[i] != 1)
        return bad("the chunk at " + torch::ShapeText(p.offsets) + " of sizes " + torch::ShapeText(p.sizes) +
                   " spans several blocks");
    const int64_t start = p.offsets[n];
    const int64_t step = p.strides[n];  // the flat dim's stride in the chunk's view
    for (const gather::Box& box : gather::FlatRangeBoxes(local, start, start + p.sizes[n])) {
      gather::Piece q = p;
      q.offsets.clear();
      q.sizes.clear();
      q.strides.clear();
      int64_t first = 0;  // the box's first element in the block's flat order
      for (size_t i = 0; i < n; ++i) {
        q.offsets.push_back(p.offsets[i]);
        q.offsets.push_back(box.offsets[i]);
        q.sizes.push_back(1);
        q.sizes.push_back(box.sizes[i]);
        q.strides.push_back(0);
        q.strides.push_back(local_strides[i] * step);
        first += box.offsets[i] * local_strides[i];
      }
      q.view_offset = p.view_offset + (first - start) * step;
      t.pieces.push_back(std::move(q));
    }
  }
  return t;
}

}  // namespace zerofold::megatron
