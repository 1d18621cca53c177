#include "ops/shrink.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/verify.h"
#include "ops/cast.h"
#include "ops/select.h"
#include "pickle/encoder.h"
#include "plan/shrink_plan.h"
#include "torch/archive_writer.h"
#include "torch/retarget.h"

namespace zerofold::ops {

std::string StemOf(const std::string& path) {
  if (path == io::kStdioName) return "archive";
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base.empty() ? "archive" : base;
}

namespace {

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

Result<ShrinkReport> ShrinkFile(Env* env, const std::string& input, const std::string& output,
                                const ShrinkOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(input));
  Result<torch::Checkpoint> read = torch::ReadCheckpoint(*src, options.read);
  if (!read.ok()) return Status(read.status()).WithPath(input);
  torch::Checkpoint& ckpt = *read;
  if (Status s = SelectSubtree(ckpt, options.select, options.read); !s.ok()) return s.WithPath(input);

  ShrinkReport report;
  report.input = input;
  report.output = output;
  report.input_file_bytes = src->size();
  report.tensors = ckpt.tensors.size();
  for (const torch::Tensor& t : ckpt.tensors) {
    Result<torch::DType> out = OutputDType(t.dtype, options.dtype);
    if (!out.ok()) return Status(out.status()).WithRecord(t.name).WithPath(input);
    report.tensor_nbytes.emplace_back(t.name, OutputNbytes(t, *out));
  }
  report.storages_before = ckpt.storages.size();
  if (!ckpt.unsafe_globals.empty()) {
    if (!options.keep_unsafe)
      return Status::Unsafe("pickle references globals that would run code when torch.load reads it: " +
                            Join(ckpt.unsafe_globals, ", ") + " (--keep-unsafe carries them through unexecuted)")
          .WithPath(input);
    report.unsafe_globals = ckpt.unsafe_globals;
  }
  if (ckpt.big_endian)
    return Status::Unsupported("byteorder record says big-endian; only little-endian data is rewritten").WithPath(input);

  if (ckpt.format == torch::Format::kTorchLegacy) {
    // Legacy pids have six items and zip archives need five; only tensor
    // pids are rebuilt, so a bare storage object cannot be carried over.
    std::vector<bool> viewed(ckpt.storages.size(), false);
    for (const torch::Tensor& t : ckpt.tensors) viewed[t.storage] = true;
    for (size_t s = 0; s < ckpt.storages.size(); ++s)
      if (!viewed[s])
        return Status::Unsupported("legacy-format storage " + ckpt.storages[s].key +
                                   " is held by no tensor; only tensors' storages are rewritten")
            .WithRecord(ckpt.storages[s].record)
            .WithPath(input);
  }
  ZF_ASSIGN_OR_RETURN(plan::ShrinkPlan plan, plan::PlanShrink(ckpt));
  Result<std::vector<StorageCast>> casts = PlanStorageCasts(ckpt, plan, options.dtype);
  if (!casts.ok()) return Status(casts.status()).WithPath(input);
  report.stored_before = plan.bytes_before;
  report.storages_after = plan.storages.size();
  for (uint32_t s : plan.changed_storages) {
    std::vector<std::string> parts;
    for (const plan::OutputStorage& o : plan.storages)
      if (o.input_storage == s) parts.push_back(std::to_string(o.nbytes()));
    report.changed_storages.push_back(ckpt.storages[s].key + ": " + std::to_string(ckpt.storages[s].nbytes) +
                                      " bytes -> " + (parts.empty() ? "none" : Join(parts, " + ")));
  }

  std::vector<torch::NewStorage> new_storages;
  std::vector<torch::StorageRecord> records;
  for (size_t i = 0; i < plan.storages.size(); ++i) {
    const plan::OutputStorage& o = plan.storages[i];
    const StorageCast& c = (*casts)[i];
    new_storages.push_back({o.key, c.out_nbytes, o.input_storage});
    records.push_back({o.key, c.out_nbytes});
    report.stored_after += c.out_nbytes;
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : plan.views) placements.push_back({v.output_storage, v.storage_offset});
  ZF_TRY(torch::RetargetTensors(ckpt, new_storages, placements, CastTargets(*casts)));
  Result<std::vector<std::byte>> pkl = pickle::Encode(ckpt.graph, ckpt.root);
  if (!pkl.ok()) return Status(pkl.status()).WithPath(input);

  // Carry the input's other records; their bytes are small.
  std::vector<torch::ExtraRecord> extras;
  for (const zip::Entry& e : ckpt.other_records) {
    Result<std::vector<std::byte>> bytes = zip::ReadEntry(*src, e, 1u << 20);
    if (!bytes.ok()) return Status(bytes.status()).WithRecord(e.name).WithPath(input);
    std::string rel = e.name.substr(ckpt.top_folder.empty() ? 0 : ckpt.top_folder.size() + 1);
    extras.push_back({rel, std::move(*bytes)});
  }
  torch::ArchiveContents contents;
  contents.top_folder = ckpt.format == torch::Format::kTorchZip && !ckpt.top_folder.empty() ? ckpt.top_folder
                                                                                             : StemOf(output);
  contents.data_pkl = *pkl;
  contents.storages = records;
  contents.extras = extras;
  report.output_file_bytes = torch::TorchArchiveSize(contents);
  if (options.dry_run) return report;

  ZF_ASSIGN_OR_RETURN(std::unique_ptr<io::NamedOutput> sink, io::OpenNamedOutput(env, output, options.zstd));
  CastCopier copier(std::max<size_t>(options.buffer_bytes, 4096));
  uint64_t done = 0;
  const uint64_t total = report.stored_after;
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    const plan::OutputStorage& o = plan.storages[index];
    const torch::Storage& in = ckpt.storages[o.input_storage];
    return copier.Copy(*src, in.data_offset + o.begin, o.nbytes(), (*casts)[index], in.record,
                       [&](std::span<const std::byte> bytes) -> Status {
                         ZF_TRY(emit(bytes));
                         done += bytes.size();
                         if (options.progress) options.progress(done, total);
                         return Status::OK();
                       });
  };
  Status written = torch::WriteTorchArchive(contents, fill, sink->sink());
  if (!written.ok()) return written.WithPath(output);
  ZF_TRY(sink->Commit());
  report.output_file_bytes = sink->stored_bytes();
  if (options.verify) {
    // src still reads the input's bytes, also after an in-place rename.
    Result<VerifyReport> v = VerifyWritten(env, *src, output, options.read, options.buffer_bytes);
    if (!v.ok()) {
      if (output != input) env->RemoveFile(output).IgnoreError();
      return v.status();
    }
    report.verified = true;
    report.verified_tensors = v->tensors;
    report.verified_bytes = v->bytes;
  }
  return report;
}

}  // namespace zerofold::ops
