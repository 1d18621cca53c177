#include "torch/retarget.h"

#include <string>
#include <vector>

#include "torch/format.h"
#include "torch/tensor_recognizer.h"

namespace zerofold::torch {

Status RetargetTensors(Checkpoint& ckpt, std::span<const NewStorage> storages,
                       std::span<const NewPlacement> placements, std::span<const std::optional<DType>> casts) {
  pickle::Graph& g = ckpt.graph;
  if (!casts.empty() && casts.size() != storages.size())
    return Status::Internal("casts for " + std::to_string(casts.size()) + " of " + std::to_string(storages.size()) +
                            " storages");
  if (placements.size() != ckpt.tensors.size())
    return Status::Internal("placements for " + std::to_string(placements.size()) + " of " +
                            std::to_string(ckpt.tensors.size()) + " tensors");
  std::vector<pickle::NodeId> key_nodes(storages.size(), pickle::kNoNode);
  std::vector<bool> args_done(g.size(), false);
  std::vector<pickle::NodeId> class_nodes(AllDTypes().size(), pickle::kNoNode);  // cast storage classes
  const bool legacy = ckpt.format == Format::kTorchLegacy;

  for (size_t t = 0; t < ckpt.tensors.size(); ++t) {
    const Tensor& tensor = ckpt.tensors[t];
    if (args_done[tensor.args]) continue;  // a tied node reached by another path
    args_done[tensor.args] = true;
    const NewPlacement& place = placements[t];
    const NewStorage& out = storages[place.storage];
    const std::optional<DType> cast = place.storage < casts.size() ? casts[place.storage] : std::nullopt;
    const Storage& in = ckpt.storages[tensor.storage];

    Result<std::optional<StoragePid>> parsed = ParseStoragePid(g, tensor.pid, ckpt.format);
    if (!parsed.ok() || !parsed->has_value())
      return Status::Internal("tensor " + tensor.name + " lost its storage pid");
    const StoragePid& pid = **parsed;
    const bool same = !legacy && !cast && out.key == in.key && out.nbytes == in.nbytes &&
                      place.storage_offset == tensor.storage_offset && out.input_storage == tensor.storage;
    if (same) continue;

    pickle::NodeId cls = pickle::kNoNode;  // a cast's storage class, else the pid's
    if (cast && !pid.untyped) {
      std::string_view name = Info(*cast).storage_class;
      if (name.empty())
        return Status::InvalidArgument("no torch storage class holds " + std::string(Info(*cast).name));
      if (class_nodes[static_cast<size_t>(*cast)] == pickle::kNoNode)
        class_nodes[static_cast<size_t>(*cast)] = g.AddGlobal(kTorchModule, name);
      cls = class_nodes[static_cast<size_t>(*cast)];
    }
    if (cast && pid.untyped && g.Items(tensor.args).size() > kArgV3DType)
      g.ReplaceItem(tensor.args, kArgV3DType, g.AddGlobal(kTorchModule, Info(*cast).name));
    const std::optional<DType> elem = cast ? cast : pid.dtype;
    uint64_t unit = pid.untyped ? 1 : Info(*elem).itemsize;
    if (out.nbytes % unit != 0)
      return Status::InvalidArgument("storage " + out.key + " of " + std::to_string(out.nbytes) +
                                     " bytes is not a whole number of " + std::to_string(unit) + "-byte elements");
    // ('storage', class, key, location, numel): reuse the tag, class and
    // location nodes, so the memo shares them as torch.save does. Read them
    // before adding nodes: graph spans do not survive mutation.
    std::span<const pickle::NodeId> old_items = g.Items(g.PersId(tensor.pid));
    pickle::NodeId items[kZipStoragePidItems] = {old_items[kPidTag],
                                                 cls != pickle::kNoNode ? cls : old_items[kPidClass],
                                                 pickle::kNoNode, old_items[kPidLocation], pickle::kNoNode};
    if (key_nodes[place.storage] == pickle::kNoNode) key_nodes[place.storage] = g.AddStr(out.key);
    items[kPidKey] = key_nodes[place.storage];
    items[kPidNumel] = g.AddInt(static_cast<int64_t>(out.nbytes / unit));
    pickle::NodeId tuple = g.AddSequence(pickle::Kind::kTuple, items);
    g.ReplaceItem(tensor.args, kArgStorage, g.AddPersId(tuple));
    g.ReplaceItem(tensor.args, kArgStorageOffset, g.AddInt(place.storage_offset));
  }
  return Status::OK();
}

}  // namespace zerofold::torch
