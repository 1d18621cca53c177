#include "rewrite/prepare.h"

#include <string>
#include <vector>

#include "model/select.h"
#include "pickle/encoder.h"
#include "pickle/safety.h"
#include "torch/retarget.h"
#include "torch/storage_source.h"

namespace zerofold::rewrite {
namespace {

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

bool IsPlainShrink(const ShrinkOptions& options) {
  return !options.convert && !options.dtype && options.select.empty() && options.only.empty();
}

Result<PreparedShrink> PrepareShrink(torch::Checkpoint& ckpt, const std::string& input, const std::string& output,
                                     const ShrinkOptions& options) {
  ZF_TRY(model::SelectTensors(ckpt, options.select, options.only, options.read, options.only_none_ok));
  PreparedShrink p;
  ShrinkReport& report = p.report;
  report.input = input;
  report.output = output;
  report.tensors = ckpt.tensors.size();
  for (const torch::Tensor& t : ckpt.tensors) {
    Result<torch::DType> out = OutputDType(t.dtype, options.dtype);
    if (!out.ok()) return Status(out.status()).WithRecord(t.name);
    report.tensor_nbytes.emplace_back(t.name, OutputNbytes(t, *out));
  }
  report.storages_before = ckpt.storages.size();
  if (!ckpt.unsafe_globals.empty()) {
    if (!options.keep_unsafe)
      return pickle::RefuseUnsafe(ckpt.unsafe_globals, pickle::kKeepCarries);
    report.unsafe_globals = ckpt.unsafe_globals;
  }
  if (ckpt.format == torch::Format::kTorchLegacy) {
    // Legacy pids have six items and zip archives need five; only tensor
    // pids are rebuilt, so a bare storage object cannot be carried over.
    std::vector<bool> viewed(ckpt.storages.size(), false);
    for (const torch::Tensor& t : ckpt.tensors) viewed[t.storage] = true;
    for (size_t s = 0; s < ckpt.storages.size(); ++s)
      if (!viewed[s])
        return Status::Unsupported("legacy-format storage " + ckpt.storages[s].key +
                                   " is held by no tensor; only tensors' storages are rewritten")
            .WithRecord(ckpt.storages[s].record);
  }

  p.top_folder = ckpt.format == torch::Format::kTorchZip && !ckpt.top_folder.empty() ? ckpt.top_folder
                                                                                      : StemOf(output);
  // A plain shrink splits a storage only where the file gets smaller; a
  // cast or a selection is a conversion, which writes every storage exactly
  // sized.
  const bool plain = IsPlainShrink(options);
  const plan::SplitCost cost(ckpt, p.top_folder + "/data/");
  ZF_ASSIGN_OR_RETURN(p.plan, plan::PlanShrink(ckpt, plain ? &cost : nullptr));
  ZF_ASSIGN_OR_RETURN(p.casts, PlanStorageCasts(ckpt, p.plan, options.dtype));
  report.stored_before = p.plan.bytes_before;
  report.storages_after = p.plan.storages.size();
  for (uint32_t s : p.plan.changed_storages) {
    std::vector<std::string> parts;
    for (const plan::OutputStorage& o : p.plan.storages)
      if (o.input_storage == s) parts.push_back(std::to_string(o.nbytes()));
    report.changed_storages.push_back(ckpt.storages[s].key + ": " + std::to_string(ckpt.storages[s].nbytes) +
                                      " bytes -> " + (parts.empty() ? "none" : Join(parts, " + ")));
  }

  for (const plan::ShrinkPlan::KeptWhole& k : p.plan.kept_whole)
    report.kept_whole.push_back(ckpt.storages[k.input_storage].key + ": kept whole: " +
                                std::to_string(k.unreferenced) + " B unreferenced, less than splitting costs");

  std::vector<torch::NewStorage> new_storages;
  for (size_t i = 0; i < p.plan.storages.size(); ++i) {
    const plan::OutputStorage& o = p.plan.storages[i];
    const uint64_t nbytes = p.casts[i].out_nbytes;
    new_storages.push_back({o.key, nbytes, o.input_storage});
    p.records.push_back({o.key, nbytes});
    report.stored_after += nbytes;
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : p.plan.views) placements.push_back({v.output_storage, v.storage_offset});
  ZF_TRY(torch::RetargetTensors(ckpt, new_storages, placements, CastTargets(p.casts)));
  ZF_ASSIGN_OR_RETURN(p.data_pkl, pickle::Encode(ckpt.graph, ckpt.root));
  return p;
}

Status WriteShrunkArchive(const RandomSource& src, const std::vector<torch::Storage>& storages,
                          const plan::ShrinkPlan& plan, const std::vector<StorageCast>& casts,
                          const torch::ArchiveContents& contents, CastCopier& copier, Sink& sink,
                          const std::function<void(uint64_t)>& wrote, torch::StorageSources::Bytes bytes) {
  torch::StorageSources sources(src, bytes);
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    const plan::OutputStorage& o = plan.storages[index];
    const torch::Storage& in = storages[o.input_storage];
    ZF_ASSIGN_OR_RETURN(const RandomSource* bytes, sources.For(in));
    return copier.Copy(*bytes, o.begin, o.nbytes(), casts[index], in.record,
                       [&](std::span<const std::byte> bytes) -> Status {
                         ZF_TRY(emit(bytes));
                         wrote(bytes.size());
                         return Status::OK();
                       });
  };
  ZF_TRY(torch::WriteTorchArchive(contents, fill, &sink));
  return sources.Finish().WithPath(src.name());
}

}  // namespace zerofold::rewrite
