#include "shrink/shrink.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "model/checkpoint_file.h"
#include "output/target.h"
#include "plan/shrink_plan.h"
#include "shrink/cast.h"
#include "shrink/prepare.h"
#include "torch/archive_writer.h"
#include "torch/storage_source.h"
#include "verify/verify.h"
#include "zip/entry_source.h"

namespace zerofold::shrink {

std::string StemOf(const std::string& path) {
  if (path == io::kStdioName) return "archive";
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  // The archive inside "X.zst" is X's.
  if (io::IsZstdName(base)) base.resize(base.size() - io::kZstdSuffix.size());
  // As torch.save names its top folder (inline_container.cc basename):
  // the last extension goes, "model.v2.pt" -> "model.v2".
  size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base.empty() ? "archive" : base;
}

namespace {

// Verifies what `sink` holds against `src` when asked, then commits it.
Result<ShrinkReport> Commit(const RandomSource& src, io::NamedOutput& sink, const ShrinkOptions& options,
                            ShrinkReport& report) {
  if (options.verify) {
    // Before the commit: a mismatch leaves the target, in place the input, as it was.
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> back, sink.OpenWritten());
    ZF_ASSIGN_OR_RETURN(verify::VerifyReport v, verify::VerifyWritten(src, *back, {options.read, options.buffer_bytes, options.select, options.only}));
    report.verified = true;
    report.verified_tensors = v.tensors;
    report.verified_bytes = v.bytes;
  }
  ZF_TRY(sink.Commit());
  report.output_file_bytes = sink.stored_bytes();
  return report;
}

// The rewrite would not be smaller than the input: `output` gets the
// input's bytes; in place (`output` names the input) nothing is written.
Result<ShrinkReport> CopyUnchanged(Env* env, const RandomSource& src, const std::string& output,
                                   const ShrinkOptions& options, ShrinkReport report) {
  report.copied_unchanged = true;
  report.output_file_bytes = report.input_file_bytes;
  report.stored_after = report.stored_before;
  report.storages_after = report.storages_before;
  report.changed_storages.clear();
  if (options.dry_run) return report;
  if (!io::IsStreamName(output) && output != report.input)
    ZF_TRY(output::CheckFreeSpace(env, output, report.input_file_bytes));
  if (output == report.input) {
    if (options.verify) {
      ZF_ASSIGN_OR_RETURN(verify::VerifyReport v, verify::VerifyWritten(src, src, {options.read, options.buffer_bytes, options.select, options.only}));
      report.verified = true;
      report.verified_tensors = v.tensors;
      report.verified_bytes = v.bytes;
    }
    return report;
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<io::NamedOutput> sink, io::OpenNamedOutput(env, output, options.zstd));
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(options.buffer_bytes, std::max<uint64_t>(src.size(), 1))));
  for (uint64_t pos = 0; pos < src.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src.size() - pos));
    std::span<std::byte> bytes(buffer.data(), n);
    ZF_TRY(ReadExactAt(src, pos, bytes));
    Status appended = sink->sink()->Append(bytes);
    if (!appended.ok()) return appended.WithPath(output);
    pos += n;
    if (options.progress) options.progress(pos, src.size());
  }
  return Commit(src, *sink, options, report);
}

}  // namespace

Result<ShrinkReport> ShrinkFile(Env* env, const std::string& input, const std::string& output,
                                const ShrinkOptions& options) {
  if (options.verify && !options.dry_run) {
    if (options.dtype) return Status::InvalidArgument("--verify compares tensors bit for bit; --dtype changes them");
    if (io::IsStreamName(output))
      return Status::InvalidArgument("--verify reads the output back; a stream ('-', .zst) cannot be").WithPath(output);
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(input));
  Result<model::CheckpointFile> read = model::ReadCheckpointFile(*src, options.read, model::SafetensorsGraph::kBuild);
  if (!read.ok()) return Status(read.status()).WithPath(input);
  torch::Checkpoint& ckpt = read->ckpt;
  // The records as read (PrepareShrink retargets ckpt to the new storages).
  const std::vector<torch::Storage> input_storages = ckpt.deflated_records > 0 ? ckpt.storages
                                                                              : std::vector<torch::Storage>();
  Result<PreparedShrink> prepared = PrepareShrink(ckpt, input, output, options);
  if (!prepared.ok()) return Status(prepared.status()).WithPath(input);
  const plan::ShrinkPlan& plan = prepared->plan;
  const std::vector<StorageCast>& casts = prepared->casts;
  ShrinkReport& report = prepared->report;
  report.input_file_bytes = src->size();

  // Carry the input's other records; their bytes are small.
  std::vector<torch::ExtraRecord> extras;
  for (const zip::Entry& e : ckpt.other_records) {
    Result<std::vector<std::byte>> bytes = zip::ReadEntry(*src, e, 1u << 20);
    if (!bytes.ok()) return Status(bytes.status()).WithRecord(e.name).WithPath(input);
    std::string rel = e.name.substr(ckpt.top_folder.empty() ? 0 : ckpt.top_folder.size() + 1);
    extras.push_back({rel, std::move(*bytes)});
  }
  torch::ArchiveContents contents;
  contents.top_folder = prepared->top_folder;
  contents.data_pkl = prepared->data_pkl;
  contents.storages = prepared->records;
  contents.extras = extras;
  report.output_file_bytes = torch::TorchArchiveSize(contents);
  // Copying unchanged keeps the input's format: only a torch input (zip,
  // stored or deflated, or legacy) into torch output; a safetensors input
  // is always converted.
  const bool torch_input = read->format != model::FileFormat::kSafetensors;
  const bool copy_unchanged =
      IsPlainShrink(options) && torch_input && report.output_file_bytes >= report.input_file_bytes;
  if (options.read_plan != nullptr) {
    if (copy_unchanged) {
      for (const torch::Storage& s : input_storages)
        gather::AddStorageReads(s, 0, s.nbytes, input, options.read_plan);
      options.read_plan->Add(input, 0, src->size());
    } else {
      for (const plan::OutputStorage& o : plan.storages)
        gather::AddStorageReads(ckpt.storages[o.input_storage], o.begin, o.end, input, options.read_plan);
    }
  }
  if (copy_unchanged) {
    // A deflated storage record is inflated and CRC-checked before it is
    // copied, as a rewrite checks it: corrupt input is never passed on.
    if (!options.dry_run && !input_storages.empty()) {
      torch::StorageSources sources(*src);
      for (const torch::Storage& s : input_storages)
        if (Status opened = sources.For(s).status(); !opened.ok()) return opened.WithPath(input);
      if (Status checked = sources.Finish(); !checked.ok()) return checked.WithPath(input);
    }
    return CopyUnchanged(env, *src, output, options, std::move(report));
  }
  if (options.dry_run) return report;
  // Streams ('-', .zst) take what they take; a file needs its exact size free.
  if (!io::IsStreamName(output)) ZF_TRY(output::CheckFreeSpace(env, output, report.output_file_bytes));

  ZF_ASSIGN_OR_RETURN(std::unique_ptr<io::NamedOutput> sink, io::OpenNamedOutput(env, output, options.zstd));
  CastCopier copier(std::max<size_t>(options.buffer_bytes, 4096));
  torch::StorageSources sources(*src);
  uint64_t done = 0;
  const uint64_t total = report.stored_after;
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    const plan::OutputStorage& o = plan.storages[index];
    const torch::Storage& in = ckpt.storages[o.input_storage];
    ZF_ASSIGN_OR_RETURN(const RandomSource* bytes, sources.For(in));
    return copier.Copy(*bytes, o.begin, o.nbytes(), casts[index], in.record,
                       [&](std::span<const std::byte> bytes) -> Status {
                         ZF_TRY(emit(bytes));
                         done += bytes.size();
                         if (options.progress) options.progress(done, total);
                         return Status::OK();
                       });
  };
  Status written = torch::WriteTorchArchive(contents, fill, sink->sink());
  if (written.ok()) written = sources.Finish().WithPath(input);
  if (!written.ok()) return written.WithPath(output);
  return Commit(*src, *sink, options, report);
}

}  // namespace zerofold::shrink
