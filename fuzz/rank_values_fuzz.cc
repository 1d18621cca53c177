// The per-rank DTensor reader (src/ranks/values.h) over a decoded pickle:
// the tensor values of a rank file's state dict, each DTensor's mesh,
// coordinates and placements, then the box the rank holds (ranks/shard.h).
// Property: a box LocalBox returns lies inside the global shape, dim for dim.
// fuzz-seeds-pickle: fixtures/ranks/*/model_world_size_*.pt fixtures/ranks/*/optim_world_size_*.pt
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "pickle/decoder.h"
#include "ranks/shard.h"
#include "ranks/values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<pickle::Decoded> d = pickle::Decode(fuzz::Bytes(data, size), 0);
  if (!d.ok()) return 0;
  Result<torch::Checkpoint> ckpt = fuzz::ModelOf(std::move(*d));
  if (!ckpt.ok()) return 0;
  Result<std::vector<ranks::RankValue>> values = ranks::FindValues(*ckpt);
  if (!values.ok()) return 0;
  for (const ranks::RankValue& v : *values) {
    if (v.tensor >= ckpt->tensors.size()) abort();
    if (!v.dtensor) continue;
    Result<ranks::Box> box = ranks::LocalBox(v.shape, v.mesh_shape, v.coords, v.placements);
    if (!box.ok()) continue;
    if (box->offsets.size() != v.shape.size() || box->sizes.size() != v.shape.size()) abort();
    for (size_t i = 0; i < v.shape.size(); ++i)
      if (box->offsets[i] < 0 || box->sizes[i] < 0 || box->offsets[i] + box->sizes[i] > v.shape[i]) abort();
  }
  return 0;
}
