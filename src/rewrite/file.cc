#include "rewrite/shrink.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gather/plan.h"
#include "model/checkpoint_file.h"
#include "output/target.h"
#include "plan/shrink_plan.h"
#include "rewrite/cast.h"
#include "rewrite/prepare.h"
#include "torch/archive_writer.h"
#include "torch/storage_source.h"
#include "torch/storage_source.h"
#include "verify/verify.h"
#include "zip/entry_source.h"
#include "zip/format.h"

namespace zerofold::rewrite {

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

// What a planned shrink's callbacks hold: the opened input and its plan.
struct ShrinkState {
  std::unique_ptr<RandomSource> src;
  torch::Checkpoint ckpt;                      // retargeted to the output storages
  std::vector<torch::Storage> input_storages;  // the records as read (zip input)
  PreparedShrink prepared;
  std::vector<torch::ExtraRecord> extras;
  torch::ArchiveContents contents;
  verify::VerifyOptions verify;
  size_t buffer_bytes = 0;
  // A plain shrink copies a big-endian archive's bytes and byteorder record
  // as they are; anything else writes what torch loads, recorded "little".
  torch::StorageSources::Bytes bytes = torch::StorageSources::Bytes::kAsTorchLoads;
};

// The copy of the input's bytes, unchanged: a deflated storage record is
// inflated and CRC-checked first, as a rewrite checks it, and a stored one
// is CRC-checked as the copy goes through it, so corrupt input is never
// passed on.
Status CopyInput(const ShrinkState& state, Sink& sink, const output::WroteBytes& wrote) {
  const RandomSource& src = *state.src;
  std::vector<zip::Entry> stored;
  for (const torch::Storage& s : state.input_storages)
    if (s.method == zip::kMethodStored && s.data_offset != zip::kUnlocated) stored.push_back(torch::RecordEntry(s));
  zip::StreamedCrcs crcs(stored);
  if (std::any_of(state.input_storages.begin(), state.input_storages.end(),
                  [](const torch::Storage& s) { return s.method != zip::kMethodStored; })) {
    torch::StorageSources sources(src);
    for (const torch::Storage& s : state.input_storages)
      if (Status opened = sources.For(s).status(); !opened.ok()) return opened.WithPath(src.name());
    if (Status checked = sources.Finish(); !checked.ok()) return checked.WithPath(src.name());
  }
  std::vector<std::byte> buffer(
      static_cast<size_t>(std::min<uint64_t>(state.buffer_bytes, std::max<uint64_t>(src.size(), 1))));
  for (uint64_t pos = 0; pos < src.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src.size() - pos));
    std::span<std::byte> bytes(buffer.data(), n);
    ZF_TRY(ReadExactAt(src, pos, bytes));
    ZF_TRY(crcs.See(pos, bytes).WithPath(src.name()));
    ZF_TRY(sink.Append(bytes));
    pos += n;
    wrote(n);
  }
  return Status::OK();
}

}  // namespace

Result<PlannedShrink> PlanShrinkFile(Env* env, const std::string& input, const std::string& output,
                                     const ShrinkOptions& options) {
  if (options.verify && !options.dry_run) {
    if (options.dtype) return Status::InvalidArgument("--verify compares tensors bit for bit; --dtype changes them");
    if (io::IsStreamName(output))
      return Status::InvalidArgument("--verify reads the output back; a stream ('-', .zst) cannot be").WithPath(output);
  }
  auto state = std::make_shared<ShrinkState>();
  ZF_ASSIGN_OR_RETURN(state->src, env->OpenRandom(input));
  const RandomSource& src = *state->src;
  Result<model::CheckpointFile> read = model::ReadCheckpointFile(src, options.read, model::SafetensorsGraph::kBuild);
  if (!read.ok()) return Status(read.status()).WithPath(input);
  state->ckpt = std::move(read->ckpt);
  torch::Checkpoint& ckpt = state->ckpt;
  // The records as read (PrepareShrink retargets ckpt to the new storages).
  const bool deflated_input = ckpt.deflated_records > 0;
  if (ckpt.format == torch::Format::kTorchZip) state->input_storages = ckpt.storages;
  Result<PreparedShrink> prepared = PrepareShrink(ckpt, input, output, options);
  if (!prepared.ok()) return Status(prepared.status()).WithPath(input);
  state->prepared = std::move(prepared).value();
  const plan::ShrinkPlan& plan = state->prepared.plan;
  PlannedShrink planned;
  planned.report = std::make_shared<ShrinkReport>(state->prepared.report);
  ShrinkReport& report = *planned.report;
  report.input_file_bytes = src.size();

  // Carry the input's other records; their bytes are small.
  for (const zip::Entry& e : ckpt.other_records) {
    Result<std::vector<std::byte>> bytes = zip::ReadEntry(src, e, 1u << 20);
    if (!bytes.ok()) return Status(bytes.status()).WithRecord(e.name).WithPath(input);
    std::string rel = e.name.substr(ckpt.top_folder.empty() ? 0 : ckpt.top_folder.size() + 1);
    state->extras.push_back({rel, std::move(*bytes)});
  }
  if (IsPlainShrink(options)) {
    state->bytes = torch::StorageSources::Bytes::kAsStored;
  } else {
    torch::RecordLittleEndian(state->extras);
  }
  torch::ArchiveContents& contents = state->contents;
  contents.top_folder = state->prepared.top_folder;
  contents.data_pkl = state->prepared.data_pkl;
  contents.storages = state->prepared.records;
  contents.extras = state->extras;
  report.output_file_bytes = torch::TorchArchiveSize(contents);
  state->verify = {options.read, options.buffer_bytes, options.select, options.only};
  state->buffer_bytes = options.buffer_bytes;

  output::PlannedFile& file = planned.file;
  file.path = output;
  file.verify = [state, shared_report = planned.report](const RandomSource& written,
                                                        const output::WroteBytes&) -> Status {
    ZF_ASSIGN_OR_RETURN(verify::VerifyReport v, verify::VerifyWritten(*state->src, written, state->verify));
    shared_report->verified = true;
    shared_report->verified_tensors = v.tensors;
    shared_report->verified_bytes = v.bytes;
    return Status::OK();
  };
  // Copying unchanged keeps the input's format: only a torch input (zip,
  // stored or deflated, or legacy) into torch output; a safetensors input
  // is always converted.
  const bool torch_input = read->format != model::FileFormat::kSafetensors;
  if (IsPlainShrink(options) && torch_input && report.output_file_bytes >= report.input_file_bytes) {
    report.copied_unchanged = true;
    report.output_file_bytes = report.input_file_bytes;
    report.stored_after = report.stored_before;
    report.storages_after = report.storages_before;
    report.changed_storages.clear();
    // Deflated records are inflated before the copy (stored ones are
    // checked by the copy's own reads).
    if (deflated_input)
      for (const torch::Storage& s : state->input_storages)
        gather::AddStorageReads(s, 0, s.nbytes, input, &file.reads);
    file.reads.Add(input, 0, src.size());
    file.bytes = report.input_file_bytes;
    file.payload = src.size();
    if (output != input) {
      file.write = [state, shared_report = planned.report](Sink& sink, const output::WroteBytes& wrote) -> Status {
        ZF_TRY(CopyInput(*state, sink, wrote));
        shared_report->output_file_bytes = sink.position();
        return Status::OK();
      };
    }
    return planned;
  }
  for (const plan::OutputStorage& o : plan.storages)
    gather::AddStorageReads(ckpt.storages[o.input_storage], o.begin, o.end, input, &file.reads);
  file.bytes = report.output_file_bytes;
  file.payload = report.stored_after;
  file.write = [state, shared_report = planned.report](Sink& sink, const output::WroteBytes& wrote) -> Status {
    CastCopier copier(std::max<size_t>(state->buffer_bytes, 4096));
    ZF_TRY(WriteShrunkArchive(*state->src, state->ckpt.storages, state->prepared.plan, state->prepared.casts,
                              state->contents, copier, sink, wrote, state->bytes));
    shared_report->output_file_bytes = sink.position();
    return Status::OK();
  };
  return planned;
}

Result<ShrinkReport> ShrinkFile(Env* env, const std::string& input, const std::string& output,
                                const ShrinkOptions& options) {
  ZF_ASSIGN_OR_RETURN(PlannedShrink planned, PlanShrinkFile(env, input, output, options));
  output::FileSet set;
  set.out = output;
  set.in_place = output == input;
  set.inputs = {input};
  set.files.push_back(planned.file);
  output::FileSetOptions writing = output::FileSetOptionsOf(options);
  writing.force = true;  // the request refused an OUT that exists (output/target.h)
  writing.zstd = options.zstd;
  writing.progress = options.progress;
  ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
  ShrinkReport report = *planned.report;
  if (!options.dry_run && planned.file.write) report.output_file_bytes = written.stored_bytes[0];
  return report;
}

}  // namespace zerofold::rewrite
