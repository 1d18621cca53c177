#include "merge/output.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gather/assemble.h"
#include "gather/piece_reader.h"
#include "gather/verify.h"
#include "gather/write.h"
#include "model/hf_folder.h"
#include "output/file_set.h"
#include "output/folder.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "output/target.h"

namespace zerofold::merge {

using namespace gather;  // the gatherer this writer executes

namespace {

// Shards of the layout's entries: each entry with the bytes it adds to its
// file, grouped with the entry holding its data, so a tie goes into its
// owner's shard (output/sharding.h).
std::vector<std::vector<size_t>> Shards(const MergeLayout& layout, const std::vector<uint64_t>& bytes,
                                        uint64_t max_bytes) {
  std::vector<output::ShardItem> items;
  items.reserve(layout.entries.size());
  for (size_t i = 0; i < layout.entries.size(); ++i)
    items.push_back(output::ShardItem{bytes[i], static_cast<uint32_t>(layout.entries[i].owner)});
  output::ShardPlan plan = output::PlanShards(items, max_bytes);
  std::vector<std::vector<size_t>> shards;
  for (const std::vector<uint32_t>& s : plan.shards) shards.emplace_back(s.begin(), s.end());
  return shards;
}

// Checks that every slice of every written tensor converts to its dtype,
// so an unsupported --dtype fails before any output exists.
Status CheckConversions(const GatherPlan& plan, const MergeLayout& layout) {
  for (const OutputEntry& e : layout.entries) {
    if (e.tie) continue;
    const GatherTensor& t = plan.tensors[e.tensor];
    for (const Piece& s : t.pieces) {
      if (!CanConvert(s.dtype, t.dtype))
        return Status::Unsupported("converting " + std::string(torch::Info(s.dtype).name) + " to " +
                                   std::string(torch::Info(t.dtype).name) + " is not supported")
            .WithRecord(e.name);
    }
  }
  return Status::OK();
}

}  // namespace

Result<OutputTarget> ResolveOutput(Env* env, const std::string& out, const OutputOptions& options) {
  output::TargetRequest request;
  request.input_is_folder = true;
  request.to = options.format;
  request.default_format = MergeFormat::kTorch;
  request.shards = options.max_shard_bytes.has_value();
  request.part = options.part.kind != output::PartSpec::Kind::kAll;
  request.streams = false;
  ZF_ASSIGN_OR_RETURN(output::Target t, output::ResolveTarget(env, out, request));
  OutputTarget target;
  target.single_file = t.kind == output::TargetKind::kFile;
  target.format = t.format;
  if (target.single_file && target.format == MergeFormat::kTorch && ArchiveStem(out).empty())
    return Status::InvalidArgument("names no archive: torch files need a name before the extension").WithPath(out);
  return target;
}

Status WriteMerge(Env* env, const GatherPlan& plan, const MergeLayout& layout, const std::string& out,
                  const OutputTarget& target, const std::vector<std::string>& inputs, const OutputOptions& options,
                  OutputReport* report) {
  report->format = target.format;
  Status convertible = CheckConversions(plan, layout);
  if (!convertible.ok()) return convertible.WithPath(out);

  // Bytes each entry adds to its file: a torch tie shares its owner's storage.
  std::vector<uint64_t> entry_bytes;
  for (const OutputEntry& e : layout.entries) {
    bool copy = !e.tie || report->format == MergeFormat::kSafetensors;
    entry_bytes.push_back(copy ? OutputBytes(plan.tensors[e.tensor]) : 0);
    if (e.tie) ++report->ties;
  }

  // Files and their entries.
  std::vector<std::vector<size_t>> shards;
  if (target.single_file) {
    shards.emplace_back();
    for (size_t i = 0; i < layout.entries.size(); ++i) shards.back().push_back(i);
  } else {
    shards = Shards(layout, entry_bytes, options.max_shard_bytes.value_or(output::kDefaultMaxShardBytes));
  }
  std::vector<TorchFilePlan> torch_files;
  std::vector<SafetensorsFilePlan> st_files;
  for (size_t k = 0; k < shards.size(); ++k) {
    MergeOutputFile f;
    if (target.single_file) {
      f.path = out;
    } else if (shards.size() == 1) {
      f.path = model::JoinPath(out, output::SingleFileName(report->format));
    } else {
      f.path = model::JoinPath(out, output::ShardFileName(report->format, k + 1, shards.size()));
    }
    f.entries = shards[k];
    if (report->format == MergeFormat::kTorch) {
      Result<TorchFilePlan> p = PlanTorchFile(plan, layout, f.entries, f.path);
      if (!p.ok()) return Status(p.status()).WithPath(f.path);
      f.bytes = p->file_bytes;
      torch_files.push_back(std::move(p).value());
    } else {
      Result<SafetensorsFilePlan> p = PlanSafetensorsFile(plan, layout, f.entries);
      if (!p.ok()) return Status(p.status()).WithPath(f.path);
      f.bytes = p->layout.file_size;
      st_files.push_back(std::move(p).value());
    }
    for (size_t i : f.entries) report->tensor_bytes += entry_bytes[i];
    report->files.push_back(std::move(f));
  }
  // The index: total_size counts the bytes stored, a torch tie once, as
  // transformers' and huggingface_hub's sharding count a shared storage.
  std::vector<std::pair<std::string, std::string>> weight_map;
  for (const MergeOutputFile& f : report->files) {
    std::string base = f.path.substr(f.path.rfind('/') + 1);
    for (size_t i : f.entries) weight_map.emplace_back(layout.entries[i].name, base);
  }
  if (report->files.size() > 1) report->index = model::JoinPath(out, output::IndexFileName(report->format));

  // The files, then (a folder OUT) the copies of the checkpoint's model
  // files and the index, as save_pretrained writes them: one run of the
  // output protocol (output/file_set.h).
  output::FileSet set;
  set.out = out;
  set.folder = !target.single_file;
  set.format = report->format;
  set.inputs = inputs;
  if (set.folder) {
    set.tail.copy_from = target.copy_from;
    set.tail.copies = target.copies;
    if (!report->index.empty()) {
      set.tail.index = report->index;
      set.tail.index_text = output::IndexText(report->index, report->tensor_bytes, weight_map);
    }
  }
  set.prepare = [&] { return CheckDeflatedRecords(plan); };
  TensorAssembler assembler(plan.sources, options.buffer_bytes);
  uint64_t verify_reads = 0;  // what verify read through the assembler
  std::vector<uint64_t> file_bytes(report->files.size(), 0);  // tensor bytes per file
  for (size_t k = 0; k < report->files.size(); ++k)
    for (size_t i : report->files[k].entries) file_bytes[k] += entry_bytes[i];
  for (size_t k = 0; k < report->files.size(); ++k) {
    output::PlannedFile& f = set.files.emplace_back();
    f.path = report->files[k].path;
    f.bytes = report->files[k].bytes;
    f.payload = file_bytes[k];
    if (report->format == MergeFormat::kTorch) {
      f.write = [&, k](Sink& sink, const output::WroteBytes& wrote) {
        return WriteTorchFile(torch_files[k], plan, assembler, &sink, wrote);
      };
    } else {
      f.write = [&, k](Sink& sink, const output::WroteBytes& wrote) {
        return WriteSafetensorsFile(st_files[k], plan, assembler, &sink, wrote);
      };
    }
    // --verify: every tensor of the file read back and compared with its sources.
    f.verify = [&, k](const RandomSource& back, const output::WroteBytes& checked) -> Status {
      const uint64_t before = assembler.bytes_read();
      const RandomSource* readers[] = {&back};
      const std::vector<MergeOutputFile> checked_files = {report->files[k]};
      ZF_ASSIGN_OR_RETURN(VerifyResult v, VerifyMergeOutput(readers, plan, layout, checked_files, report->format,
                                                            assembler, options.read, options.buffer_bytes,
                                                            checked));
      verify_reads += assembler.bytes_read() - before;
      report->verified = true;
      report->verified_tensors += v.tensors;
      report->verified_bytes += v.bytes;
      return Status::OK();
    };
    const std::vector<size_t>& tensors =
        report->format == MergeFormat::kTorch ? torch_files[k].storage_tensor : st_files[k].tensor_of;
    for (size_t t : tensors) AddTensorReads(plan, plan.tensors[t], &f.reads);
  }
  output::FileSetOptions writing = output::FileSetOptionsOf(options);
  writing.part = options.part;
  writing.force = options.force;
  if (options.progress)
    writing.progress = [&](const output::SetProgress& p) {
      options.progress(p.verifying ? "verify" : "merge", p.done, p.total);
    };
  ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
  if (options.part.kind != output::PartSpec::Kind::kAll) report->parts = std::move(written.parts);
  for (size_t k = 0; k < report->files.size(); ++k) report->files[k].bytes = written.stored_bytes[k];
  report->bytes_read = assembler.bytes_read() - verify_reads;
  report->copied = std::move(written.copied);
  report->removed = std::move(written.removed);
  return Status::OK();
}

}  // namespace zerofold::merge
