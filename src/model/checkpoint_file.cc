#include "model/checkpoint_file.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "json/reader.h"
#include "torch/read.h"
#include "torch/state_dict.h"

namespace zerofold::model {

namespace {

constexpr const char* kMetadataRecord = "__metadata__";
constexpr const char* kTiedQuoted = "\"zerofold.tied\" ";

std::string Quoted(const std::string& name) {
  std::string out(1, '"');
  out.append(name);
  out.push_back('"');
  return out;
}

// The --dedupe-tied record of `file`: dropped name -> kept name.
Result<std::map<std::string, std::string>> TiedNames(const safetensors::File& file,
                                                     const std::map<std::string, uint32_t>& tensors) {
  std::map<std::string, std::string> dropped;
  for (const auto& [key, text] : file.metadata) {
    if (key != kTiedMetadataKey) continue;
    auto corrupt = [&](const std::string& why) {
      std::string message = kTiedQuoted;
      message.append(why);
      return Status::Corrupt(message).WithRecord(kMetadataRecord);
    };
    Result<json::Value> v = json::Parse(text);
    if (!v.ok() || !v->is_object()) return corrupt("is no JSON object of tensor names");
    for (const json::Member& m : v->members()) {
      const std::string dropped_name = Quoted(m.key);
      if (!m.value.is_string()) return corrupt("maps " + dropped_name + " to no tensor name");
      if (tensors.count(m.key)) return corrupt("drops " + dropped_name + ", which the file holds");
      if (!tensors.count(m.value.string()))
        return corrupt("keeps " + Quoted(m.value.string()) + " for " + dropped_name + ", which the file lacks");
      dropped[m.key] = m.value.string();
    }
  }
  return dropped;
}

}  // namespace

std::string NoTorchView(const safetensors::TensorInfo& info) {
  const std::string code(safetensors::DtypeCode(info.dtype));
  if (!safetensors::ToTorch(info.dtype)) return "dtype " + code + " has no torch dtype";
  if (info.dtype == safetensors::Dtype::F4) {
    std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
    return "F4 tensor of shape " + torch::ShapeText(shape) +
           " has no torch shape: torch's float4_e2m1fn_x2 holds two F4 values per element, so the last "
           "dimension must be even";
  }
  for (uint64_t d : info.shape)
    if (!std::in_range<int64_t>(d)) return "dimension " + std::to_string(d) + " is past 2^63 - 1";
  return "no torch shape";
}

Result<torch::Checkpoint> SafetensorsCheckpoint(const safetensors::File& file, SafetensorsGraph graph,
                                                TorchlessTensors mode, std::vector<TorchlessTensor>* torchless) {
  torch::Checkpoint ckpt;
  ckpt.format = torch::Format::kTorchZip;
  std::map<std::string, uint32_t> by_name;  // stored tensors
  for (uint32_t index : file.by_name) by_name.emplace(file.tensors[index].name, index);
  ZF_ASSIGN_OR_RETURN(auto dropped, TiedNames(file, by_name));
  // Every name in name order, each with the stored tensor it reads.
  std::map<std::string, uint32_t> names = by_name;
  for (const auto& [name, kept] : dropped) names.emplace(name, by_name.at(kept));
  std::vector<torch::StateDictEntry> entries;
  std::map<uint32_t, size_t> first_entry;  // stored tensor -> the entry that holds its storage
  for (const auto& [name, index] : names) {
    const safetensors::TensorInfo& info = file.tensors[index];
    const bool as_bytes = !info.torch_dtype && mode == TorchlessTensors::kAsBytes &&
                          std::in_range<int64_t>(info.byte_size());
    if (!info.torch_dtype && !as_bytes)
      return Status::Unsupported(NoTorchView(info)).WithRecord(info.name).WithOffset(info.header_offset);
    torch::Tensor t;
    t.name = name;
    t.path.push_back({torch::PathElem::Type::kStrKey, name, 0});
    t.dtype = as_bytes ? torch::DType::kUInt8 : *info.torch_dtype;
    t.shape = as_bytes ? std::vector<int64_t>{static_cast<int64_t>(info.byte_size())} : info.torch_shape;
    if (as_bytes && torchless) torchless->push_back({name, info.dtype, info.shape});
    t.stride = torch::ContiguousStrides(t.shape);
    auto [holder, fresh] = first_entry.emplace(index, entries.size());
    if (fresh) {
      torch::Storage s;
      s.key = std::to_string(ckpt.storages.size());
      s.dtype = t.dtype;
      s.nbytes = info.byte_size();
      s.location = "cpu";
      s.record = info.name;
      s.data_offset = info.data_offset;
      s.record_size = info.byte_size();
      ckpt.storages.push_back(std::move(s));
    }
    t.storage = ckpt.tensors[holder->second].storage;
    if (fresh) t.storage = static_cast<uint32_t>(ckpt.storages.size() - 1);
    entries.push_back({name, t.dtype, t.shape, holder->second});
    ckpt.tensors.push_back(std::move(t));
  }
  if (graph == SafetensorsGraph::kSkip) return ckpt;
  ZF_ASSIGN_OR_RETURN(torch::StateDictGraph built, torch::BuildStateDict(entries));
  ckpt.graph = std::move(built.graph);
  ckpt.root = built.root;
  for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
    torch::Tensor& t = ckpt.tensors[i];
    t.node = t.rebuild = built.entries[i].tensor;
    t.args = built.entries[i].args;
    t.pid = built.entries[i].pid;
    if (entries[i].data == i) ckpt.storages[t.storage].pid_node = t.pid;
  }
  return ckpt;
}

Result<CheckpointFile> ReadCheckpointFile(const RandomSource& src, const torch::ReadOptions& options,
                                          SafetensorsGraph graph, TorchlessTensors torchless) {
  CheckpointFile out;
  ZF_ASSIGN_OR_RETURN(out.format, model::SniffFormat(src));
  if (out.format == model::FileFormat::kSafetensors) {
    ZF_ASSIGN_OR_RETURN(safetensors::File file, safetensors::ReadHeader(src));
    ZF_ASSIGN_OR_RETURN(out.ckpt, SafetensorsCheckpoint(file, graph, torchless, &out.torchless));
    out.metadata = std::move(file.metadata);
    return out;
  }
  ZF_ASSIGN_OR_RETURN(out.ckpt, torch::ReadCheckpoint(src, options));
  out.format = out.ckpt.format == torch::Format::kTorchZip ? model::FileFormat::kTorchZip
                                                           : model::FileFormat::kTorchLegacy;
  return out;
}

}  // namespace zerofold::model
