#include "model/checkpoint_file.h"

#include <string>
#include <utility>
#include <vector>

#include "torch/read.h"
#include "torch/state_dict.h"

namespace zerofold::model {

Result<torch::Checkpoint> SafetensorsCheckpoint(const safetensors::File& file, SafetensorsGraph graph) {
  torch::Checkpoint ckpt;
  ckpt.format = torch::Format::kTorchZip;
  std::vector<torch::StateDictEntry> entries;
  for (uint32_t index : file.by_name) {
    const safetensors::TensorInfo& info = file.tensors[index];
    if (!info.torch_dtype)
      return Status::Unsupported("dtype " + std::string(safetensors::DtypeCode(info.dtype)) + " has no torch dtype")
          .WithRecord(info.name)
          .WithOffset(info.header_offset);
    torch::Tensor t;
    t.name = info.name;
    t.path.push_back({torch::PathElem::Type::kStrKey, info.name, 0});
    t.dtype = *info.torch_dtype;
    for (uint64_t d : info.shape) {
      if (!std::in_range<int64_t>(d))
        return Status::Unsupported("dimension " + std::to_string(d) + " is past 2^63 - 1")
            .WithRecord(info.name)
            .WithOffset(info.header_offset);
      t.shape.push_back(static_cast<int64_t>(d));
    }
    t.stride = torch::ContiguousStrides(t.shape);
    t.storage = static_cast<uint32_t>(ckpt.storages.size());
    torch::Storage s;
    s.key = std::to_string(ckpt.storages.size());
    s.dtype = t.dtype;
    s.nbytes = info.byte_size();
    s.location = "cpu";
    s.record = info.name;
    s.data_offset = info.data_offset;
    s.record_size = info.byte_size();
    ckpt.storages.push_back(std::move(s));
    entries.push_back({info.name, t.dtype, t.shape, entries.size()});
    ckpt.tensors.push_back(std::move(t));
  }
  if (graph == SafetensorsGraph::kSkip) return ckpt;
  for (const safetensors::TensorInfo& info : file.tensors)
    if (torch::Info(*info.torch_dtype).storage_class.empty())
      return Status::Unsupported(std::string(torch::Info(*info.torch_dtype).name) +
                                 " tensors are written by torch.save without a typed storage class, which "
                                 "torch 1.13 has not; only other dtypes convert to torch")
          .WithRecord(info.name)
          .WithOffset(info.header_offset);
  ZF_ASSIGN_OR_RETURN(torch::StateDictGraph built, torch::BuildStateDict(entries));
  ckpt.graph = std::move(built.graph);
  ckpt.root = built.root;
  for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
    torch::Tensor& t = ckpt.tensors[i];
    t.node = t.rebuild = built.entries[i].tensor;
    t.args = built.entries[i].args;
    t.pid = built.entries[i].pid;
    ckpt.storages[t.storage].pid_node = t.pid;
  }
  return ckpt;
}

Result<CheckpointFile> ReadCheckpointFile(const RandomSource& src, const torch::ReadOptions& options,
                                          SafetensorsGraph graph) {
  CheckpointFile out;
  ZF_ASSIGN_OR_RETURN(out.format, model::SniffFormat(src));
  if (out.format == model::FileFormat::kSafetensors) {
    ZF_ASSIGN_OR_RETURN(safetensors::File file, safetensors::ReadHeader(src));
    ZF_ASSIGN_OR_RETURN(out.ckpt, SafetensorsCheckpoint(file, graph));
    out.metadata = std::move(file.metadata);
    return out;
  }
  ZF_ASSIGN_OR_RETURN(out.ckpt, torch::ReadCheckpoint(src, options));
  out.format = out.ckpt.format == torch::Format::kTorchZip ? model::FileFormat::kTorchZip
                                                           : model::FileFormat::kTorchLegacy;
  return out;
}

}  // namespace zerofold::model
