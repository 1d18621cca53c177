// Moving tensor views to new storages by patching the pickle graph, for
// writers that change storage layout (shrink, select). Only the storage pid
// and offset arguments of rebuild calls change; every other value stays as
// decoded, so an unchanged graph re-encodes to the same bytes.
#ifndef ZEROFOLD_TORCH_RETARGET_H_
#define ZEROFOLD_TORCH_RETARGET_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "torch/checkpoint.h"
#include "zerofold/status.h"

namespace zerofold::torch {

struct NewStorage {
  std::string key;          // output record data/<key>
  uint64_t nbytes = 0;      // exact size
  uint32_t input_storage = 0;  // whose class and location the new pid copies
};

struct NewPlacement {
  uint32_t storage = 0;     // index into the NewStorage list
  int64_t storage_offset = 0;  // elements of the tensor's dtype
};

// Points every tensor of ckpt (placements parallel to ckpt.tensors) at its
// new storage and offset. A pid whose key, size and offset would not change
// is left untouched (zip input); legacy pids (six items) are always rebuilt
// as the zip format's five. Each new storage gets one key string node, shared
// by its pids as torch.save shares them. kInvalidArgument if a storage's size
// is not a whole number of its class's elements, or a cast dtype has no
// storage class.
//
// `casts` is empty or parallel to `storages`: a dtype there says the
// storage's bytes were cast to it (torch/cast.h), so its typed pids get that
// dtype's storage class, and _rebuild_tensor_v3's dtype argument (views of
// an UntypedStorage) becomes it.
Status RetargetTensors(Checkpoint& ckpt, std::span<const NewStorage> storages,
                       std::span<const NewPlacement> placements,
                       std::span<const std::optional<DType>> casts = {});

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_RETARGET_H_
