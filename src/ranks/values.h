// The values of one rank's torch.save(state_dict) file as FSDP2 (verl,
// SkyRL) writes it: per key, a DTensor (its local tensor, global shape and
// dtype, device mesh shape, this rank's coordinates, placements) or a
// plain tensor (a buffer, an optimizer's step), read from the pickle graph
// by the schema torch 2.x pickles them with; nothing is run and no tensor
// byte is read.
//
// A DTensor pickles as _rebuild_from_type_v2(_rebuild_wrapper_subclass,
// DTensor, (DTensor, dtype, size, stride, ...), (None, {"_local_tensor":
// tensor, "_spec": DTensorSpec})) (DTensor's __slots__ state), the spec built by NEWOBJ + BUILD with a dict of
// mesh (DeviceMesh: "mesh" a tensor of ranks whose shape is the mesh's,
// "_coordinate_on_dim" the saving rank's coordinates, "mesh_dim_names"),
// placements (Shard/_StridedShard/Replicate/Partial, NEWOBJ + BUILD of
// their fields) and tensor_meta (TensorMeta(Size, stride, dtype); when it
// is None, the wrapper's dtype and size stand for it).
#ifndef ZEROFOLD_RANKS_VALUES_H_
#define ZEROFOLD_RANKS_VALUES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ranks/shard.h"
#include "torch/checkpoint.h"
#include "torch/dtype.h"
#include "zerofold/result.h"

namespace zerofold::ranks {

struct RankValue {
  std::string name;        // dict keys joined with "." (int keys in decimal)
  bool dtensor = false;
  size_t tensor = 0;       // index into Checkpoint::tensors: the local tensor (plain: the tensor)
  torch::DType dtype = torch::DType::kFloat32;  // the global tensor's
  std::vector<int64_t> shape;                   // the global tensor's
  // DTensor only.
  std::vector<int64_t> mesh_shape;
  std::vector<int64_t> coords;
  std::vector<std::string> mesh_dim_names;  // empty when unnamed
  std::vector<Placement> placements;
};

// The tensor values under the pickle's root dict, depth first in dict
// order (dicts and OrderedDicts are walked; lists, numbers and strings
// are not values). kCorrupt (record: the value's name) for a DTensor whose
// pickle departs from the schema above, whose local tensor's dtype differs
// from its spec's, or whose mesh has no coordinate for the saving rank;
// kUnsupported for a placement class not listed above.
Result<std::vector<RankValue>> FindValues(const torch::Checkpoint& ckpt);

}  // namespace zerofold::ranks

#endif  // ZEROFOLD_RANKS_VALUES_H_
