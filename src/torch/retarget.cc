#include "torch/retarget.h"

#include <string>
#include <vector>

#include "torch/format.h"
#include "torch/tensor_recognizer.h"

namespace zerofold::torch {

Status RetargetTensors(Checkpoint& ckpt, std::span<const NewStorage> storages,
                       std::span<const NewPlacement> placements) {
  pickle::Graph& g = ckpt.graph;
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
    const Storage& in = ckpt.storages[tensor.storage];

    std::span<const pickle::NodeId> pid_items = g.Items(g.PersId(tensor.pid));
    Result<std::optional<StoragePid>> parsed = ParseStoragePid(g, tensor.pid, ckpt.format);
    if (!parsed.ok() || !parsed->has_value())
      return Status::Internal("tensor " + tensor.name + " lost its storage pid");
    const StoragePid& pid = **parsed;
    const bool same = !legacy && !out.dtype && out.key == in.key && out.nbytes == in.nbytes &&
                      place.storage_offset == tensor.storage_offset && out.input_storage == tensor.storage;
    if (same) continue;

    pickle::NodeId cls = pid_items[1];
    if (out.dtype && !pid.untyped) {
      std::string_view name = Info(*out.dtype).storage_class;
      if (name.empty())
        return Status::InvalidArgument("no torch storage class holds " + std::string(Info(*out.dtype).name));
      if (class_nodes[static_cast<size_t>(*out.dtype)] == pickle::kNoNode)
        class_nodes[static_cast<size_t>(*out.dtype)] = g.AddGlobal(kTorchModule, name);
      cls = class_nodes[static_cast<size_t>(*out.dtype)];
    }
    constexpr size_t kV3DtypeArg = 6;  // _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype)
    if (out.dtype && pid.untyped && g.Items(tensor.args).size() > kV3DtypeArg)
      g.ReplaceItem(tensor.args, kV3DtypeArg, g.AddGlobal(kTorchModule, Info(*out.dtype).name));
    const std::optional<DType> elem = out.dtype ? out.dtype : pid.dtype;
    uint64_t unit = pid.untyped ? 1 : Info(*elem).itemsize;
    if (out.nbytes % unit != 0)
      return Status::InvalidArgument("storage " + out.key + " of " + std::to_string(out.nbytes) +
                                     " bytes is not a whole number of " + std::to_string(unit) + "-byte elements");
    if (key_nodes[place.storage] == pickle::kNoNode) key_nodes[place.storage] = g.AddStr(out.key);
    // ('storage', class, key, location, numel): reuse the tag, class and
    // location nodes, so the memo shares them as torch.save does.
    pickle::NodeId items[5] = {pid_items[0], cls, key_nodes[place.storage], pid_items[3],
                               g.AddInt(static_cast<int64_t>(out.nbytes / unit))};
    pickle::NodeId tuple = g.AddSequence(pickle::Kind::kTuple, items);
    g.ReplaceItem(tensor.args, 0, g.AddPersId(tuple));
    g.ReplaceItem(tensor.args, 1, g.AddInt(place.storage_offset));
  }
  return Status::OK();
}

}  // namespace zerofold::torch
