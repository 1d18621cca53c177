#include "gather/write.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "safetensors/dtype.h"
#include "torch/archive_writer.h"

namespace zerofold::gather {

namespace {

// transformers' save_pretrained metadata for torch weights.
constexpr const char* kFormatKey = "format";
constexpr const char* kFormatTorch = "pt";

}  // namespace

std::string ArchiveStem(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot != std::string_view::npos) base = base.substr(0, dot);
  return std::string(base);
}

Result<TorchFilePlan> PlanTorchFile(const GatherPlan& plan, const MergeLayout& layout,
                                    std::span<const size_t> entries, const std::string& path) {
  TorchFilePlan file;
  file.top_folder = ArchiveStem(path);
  std::vector<torch::StateDictEntry> dict;
  dict.reserve(entries.size());
  std::unordered_map<size_t, size_t> local;  // layout entry -> index in dict
  for (size_t index : entries) {
    const OutputEntry& e = layout.entries[index];
    const GatherTensor& t = plan.tensors[e.tensor];
    torch::StateDictEntry d{e.name, t.dtype, t.shape, dict.size()};
    auto owner = local.find(e.owner);
    if (e.tie && owner != local.end()) d.data = owner->second;
    local.emplace(index, dict.size());
    dict.push_back(std::move(d));
  }
  ZF_ASSIGN_OR_RETURN(file.pickle, torch::EncodeStateDict(dict));
  for (size_t entry : file.pickle.storage_entry) file.storage_tensor.push_back(layout.entries[entries[entry]].tensor);
  torch::ArchiveContents contents;
  contents.top_folder = file.top_folder;
  contents.data_pkl = file.pickle.data_pkl;
  contents.storages = file.pickle.storages;
  file.file_bytes = torch::TorchArchiveSize(contents);
  return file;
}

Status WriteTorchFile(const TorchFilePlan& file, const GatherPlan& plan, TensorAssembler& assembler, Sink* sink,
                      const WriteProgress& progress) {
  torch::ArchiveContents contents;
  contents.top_folder = file.top_folder;
  contents.data_pkl = file.pickle.data_pkl;
  contents.storages = file.pickle.storages;
  std::vector<const GatherTensor*> order;
  for (size_t t : file.storage_tensor) order.push_back(&plan.tensors[t]);
  assembler.ReadAheadFor(std::move(order));
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    const GatherTensor& t = plan.tensors[file.storage_tensor[index]];
    return assembler.Assemble(t, [&](std::span<const std::byte> bytes) -> Status {
      ZF_TRY(emit(bytes));
      if (progress) progress(bytes.size());
      return Status::OK();
    });
  };
  return torch::WriteTorchArchive(contents, fill, sink);
}

Result<SafetensorsFilePlan> PlanSafetensorsFile(const GatherPlan& plan, const MergeLayout& layout,
                                                std::span<const size_t> entries) {
  std::vector<safetensors::TensorSpec> specs;
  std::vector<size_t> spec_tensor;
  specs.reserve(entries.size());
  for (size_t index : entries) {
    const OutputEntry& e = layout.entries[index];
    const GatherTensor& t = plan.tensors[e.tensor];
    std::optional<safetensors::Dtype> dtype = safetensors::FromTorch(t.dtype);
    if (!dtype)
      return Status::Unsupported(e.name + " has dtype " + std::string(torch::Info(t.dtype).name) +
                                 ", which safetensors has no code for");
    safetensors::TensorSpec spec;
    spec.name = e.name;
    spec.dtype = *dtype;
    std::optional<std::vector<uint64_t>> shape = safetensors::ShapeFromTorch(*dtype, t.shape);
    if (!shape) return Status::Unsupported(e.name + ": " + safetensors::NoShapeReason(*dtype, t.shape));
    spec.shape = std::move(*shape);
    spec.byte_size = OutputBytes(t);
    specs.push_back(std::move(spec));
    spec_tensor.push_back(e.tensor);
  }
  SafetensorsFilePlan file;
  ZF_ASSIGN_OR_RETURN(file.layout,
                      safetensors::PlanFile(specs, safetensors::Metadata{{kFormatKey, kFormatTorch}}));
  for (const safetensors::PlannedTensor& p : file.layout.tensors) file.tensor_of.push_back(spec_tensor[p.input_index]);
  return file;
}

Status WriteSafetensorsFile(const SafetensorsFilePlan& file, const GatherPlan& plan, TensorAssembler& assembler,
                            Sink* sink, const WriteProgress& progress) {
  std::vector<const GatherTensor*> order;
  for (size_t t : file.tensor_of) order.push_back(&plan.tensors[t]);
  assembler.ReadAheadFor(std::move(order));
  safetensors::StreamWriter writer(file.layout, *sink);
  ZF_TRY(writer.WriteHeader());
  for (size_t i = 0; i < file.layout.tensors.size(); ++i) {
    ZF_TRY(writer.BeginTensor(file.layout.tensors[i].name));
    ZF_TRY(assembler.Assemble(plan.tensors[file.tensor_of[i]], [&](std::span<const std::byte> bytes) -> Status {
      ZF_TRY(writer.Append(bytes));
      if (progress) progress(bytes.size());
      return Status::OK();
    }));
  }
  return writer.Finish();
}

}  // namespace zerofold::gather
