#include "ops/merge.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "model/hf_folder.h"
#include "ops/convert.h"
#include "ops/merge_assemble.h"
#include "ops/merge_load.h"
#include "ops/merge_verify.h"
#include "ops/merge_write.h"
#include "ops/zero_sources.h"

namespace zerofold::ops {

namespace {

// OUT names that are one file rather than a folder.
constexpr std::string_view kFileSuffixes[] = {".bin", ".pt", ".safetensors"};
constexpr std::string_view kSafetensorsSuffix = ".safetensors";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Shards of the layout's entries: each entry with the bytes it adds to its
// file, grouped with the entry holding its data, so a tie goes into its
// owner's shard (ops/sharding.h).
std::vector<std::vector<size_t>> Shards(const MergeLayout& layout, const std::vector<uint64_t>& bytes,
                                        uint64_t max_bytes) {
  std::vector<ShardItem> items;
  items.reserve(layout.entries.size());
  for (size_t i = 0; i < layout.entries.size(); ++i)
    items.push_back(ShardItem{bytes[i], static_cast<uint32_t>(layout.entries[i].owner)});
  ShardPlan plan = PlanShards(items, max_bytes);
  std::vector<std::vector<size_t>> shards;
  for (const std::vector<uint32_t>& s : plan.shards) shards.emplace_back(s.begin(), s.end());
  return shards;
}

// Checks that every slice of every written tensor converts to its dtype,
// so an unsupported --dtype fails before any output exists.
Status CheckConversions(const zero::MergePlan& plan, const MergeLayout& layout) {
  for (const OutputEntry& e : layout.entries) {
    if (e.tie) continue;
    const zero::OutputTensor& t = plan.tensors[e.tensor];
    for (const zero::SourceSlice& s : t.slices) {
      if (!CanConvert(s.dtype, t.dtype))
        return Status::Unsupported("converting " + std::string(torch::Info(s.dtype).name) + " to " +
                                   std::string(torch::Info(t.dtype).name) + " is not supported")
            .WithRecord(e.name);
    }
  }
  return Status::OK();
}

}  // namespace

Result<MergeReport> MergeCheckpoint(Env* env, const std::string& ckpt_dir, const std::string& out,
                                    const MergeOptions& options) {
  MergeReport report;
  report.checkpoint = ckpt_dir;

  // Where the output goes, before any work.
  bool single_file = false;
  std::optional<MergeFormat> implied;
  for (std::string_view suffix : kFileSuffixes) {
    if (EndsWith(out, suffix)) {
      single_file = true;
      implied = suffix == kSafetensorsSuffix ? MergeFormat::kSafetensors : MergeFormat::kTorch;
    }
  }
  if (implied && options.format && *implied != *options.format)
    return Status::InvalidArgument("--to " + std::string(MergeFormatName(*options.format)) + " contradicts the " +
                                   std::string(MergeFormatName(*implied)) + " file name")
        .WithPath(out);
  report.format = implied ? *implied : options.format.value_or(MergeFormat::kTorch);
  if (single_file && report.format == MergeFormat::kTorch && ArchiveStem(out).empty())
    return Status::InvalidArgument("names no archive: torch files need a name before the extension").WithPath(out);
  if (single_file && env->IsDirectory(out))
    return Status::InvalidArgument("is a folder; a file name ending in .bin, .pt or .safetensors is written as a file")
        .WithPath(out);

  ZF_ASSIGN_OR_RETURN(std::string tag_folder, FindTagFolder(env, ckpt_dir, options.tag));
  ZF_ASSIGN_OR_RETURN(LoadedZero loaded, LoadZeroCheckpoint(env, tag_folder, options.read));
  ZF_TRY(LinkZero0(&loaded, /*by_value=*/true).status());
  report.tag_folder = loaded.tag_folder;
  report.tag = loaded.tag;
  report.warnings = loaded.warnings;
  for (const ZeroFile& f : loaded.model_files) report.input_files.push_back(f.path);
  for (const ZeroFile& f : loaded.optim_files) report.input_files.push_back(f.path);
  for (const ZeroFile& f : loaded.param_files) report.input_files.push_back(f.path);
  report.model_files = loaded.model_files.size();
  report.optim_files = loaded.optim_files.size();
  if (!loaded.description.model_states.empty()) report.ds_version = loaded.description.model_states[0].ds_version;

  zero::PlanOptions plan_options;
  plan_options.float_dtype = options.dtype;
  plan_options.exclude_frozen = options.exclude_frozen;
  Result<zero::MergePlan> planned = zero::PlanMerge(loaded.description, plan_options);
  // The planner names the file concerned; errors about the whole set of
  // files (a missing rank) get the tag folder.
  if (!planned.ok()) return Status(planned.status()).WithPath(tag_folder);
  report.plan = std::move(planned).value();
  ZF_ASSIGN_OR_RETURN(report.layout, LayOutMerge(report.plan, loaded.description, options.only));
  const zero::MergePlan& plan = report.plan;
  const MergeLayout& layout = report.layout;
  Status convertible = CheckConversions(plan, layout);
  if (!convertible.ok()) return convertible.WithPath(out);

  // Bytes each entry adds to its file: a torch tie shares its owner's storage.
  std::vector<uint64_t> entry_bytes;
  for (const OutputEntry& e : layout.entries) {
    bool copy = !e.tie || report.format == MergeFormat::kSafetensors;
    entry_bytes.push_back(copy ? OutputBytes(plan.tensors[e.tensor]) : 0);
    if (e.tie) {
      ++report.ties;
    } else {
      switch (plan.tensors[e.tensor].kind) {
        case zero::TensorKind::kParam: ++report.params; break;
        case zero::TensorKind::kFrozenParam: ++report.frozen_params; break;
        case zero::TensorKind::kBuffer: ++report.buffers; break;
      }
    }
  }

  // Files and their entries.
  std::vector<std::vector<size_t>> shards;
  if (single_file) {
    shards.emplace_back();
    for (size_t i = 0; i < layout.entries.size(); ++i) shards.back().push_back(i);
  } else {
    shards = Shards(layout, entry_bytes, options.max_shard_bytes);
  }
  std::vector<TorchFilePlan> torch_files;
  std::vector<SafetensorsFilePlan> st_files;
  for (size_t k = 0; k < shards.size(); ++k) {
    MergeOutputFile f;
    if (single_file) {
      f.path = out;
    } else if (shards.size() == 1) {
      f.path = model::JoinPath(out, SingleFileName(report.format));
    } else {
      f.path = model::JoinPath(out, ShardFileName(report.format, k + 1, shards.size()));
    }
    f.entries = shards[k];
    if (report.format == MergeFormat::kTorch) {
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
    for (size_t i : f.entries) report.tensor_bytes += entry_bytes[i];
    report.files.push_back(std::move(f));
  }
  // The index: total_size counts the bytes stored, a torch tie once, as
  // transformers' and huggingface_hub's sharding count a shared storage.
  std::vector<std::pair<std::string, std::string>> weight_map;
  std::set<std::string> written;  // base names in a folder OUT
  for (const MergeOutputFile& f : report.files) {
    std::string base = f.path.substr(f.path.rfind('/') + 1);
    written.insert(base);
    for (size_t i : f.entries) weight_map.emplace_back(layout.entries[i].name, base);
  }
  if (report.files.size() > 1) {
    report.index = model::JoinPath(out, IndexFileName(report.format));
    written.insert(IndexFileName(report.format));
  }

  // Refuse to replace files unasked, and never write onto an input, by any
  // name. In a folder OUT, the files of an earlier save count too: --force
  // replaces that save whole (its other shards are removed), as
  // save_pretrained does.
  std::vector<std::string> targets;
  for (const MergeOutputFile& f : report.files) targets.push_back(f.path);
  if (!report.index.empty()) targets.push_back(report.index);
  std::vector<std::string> earlier;  // a folder OUT's earlier save
  if (!single_file) {
    ZF_ASSIGN_OR_RETURN(earlier, EarlierSave(env, out, report.format));
  }
  std::vector<std::string> replaced = targets;
  replaced.insert(replaced.end(), earlier.begin(), earlier.end());
  ZF_TRY(RefuseInputTargets(env, report.input_files, replaced, "is an input file of the merge"));
  for (const std::string& t : targets) {
    if (!options.force && env->FileExists(t))
      return Status::InvalidArgument("exists; use --force to replace it").WithPath(t);
  }
  if (!options.force && !earlier.empty())
    return Status::InvalidArgument("is part of an earlier save in the output folder; use --force to replace it")
        .WithPath(earlier.front());
  if (options.dry_run) return report;

  if (!single_file) ZF_TRY(env->CreateDirs(out));
  TensorAssembler assembler(loaded, options.buffer_bytes);
  uint64_t done = 0;
  const uint64_t total = report.tensor_bytes;
  WriteProgress progress = [&](uint64_t n) {
    done += n;
    if (options.progress) options.progress("merge", done, total);
  };
  std::vector<std::unique_ptr<AtomicFileSink>> sinks;
  for (size_t k = 0; k < report.files.size(); ++k) {
    const MergeOutputFile& f = report.files[k];
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(f.path));
    // The file sink writes on its own thread (io/direct_writer.h); Flush
    // ends that and frees its buffers before the next file starts.
    Status written = report.format == MergeFormat::kTorch
                         ? WriteTorchFile(torch_files[k], plan, assembler, sink.get(), progress)
                         : WriteSafetensorsFile(st_files[k], plan, assembler, sink.get(), progress);
    if (written.ok()) written = sink->Flush();
    if (!written.ok()) return written.WithPath(f.path);
    sinks.push_back(std::move(sink));
  }
  report.bytes_read = assembler.bytes_read();  // before verify reads more
  if (options.verify) {
    // Before any commit: a mismatch leaves every target as it was.
    std::vector<std::unique_ptr<RandomSource>> backs;
    std::vector<const RandomSource*> readers;
    for (size_t k = 0; k < sinks.size(); ++k) {
      Result<std::unique_ptr<RandomSource>> back = sinks[k]->OpenWritten();
      if (!back.ok()) return Status(back.status()).WithPath(report.files[k].path);
      backs.push_back(std::move(*back));
      readers.push_back(backs.back().get());
    }
    uint64_t checked = 0;
    uint64_t verify_total = 0;
    for (const MergeOutputFile& f : report.files)
      for (size_t i : f.entries) verify_total += entry_bytes[i];
    auto verify_progress = [&](uint64_t n) {
      checked += n;
      if (options.progress) options.progress("verify", checked, verify_total);
    };
    ZF_ASSIGN_OR_RETURN(VerifyResult v, VerifyMergeOutput(readers, plan, layout, report.files, report.format,
                                                          assembler, options.read, options.buffer_bytes,
                                                          verify_progress));
    report.verified = true;
    report.verified_tensors = v.tensors;
    report.verified_bytes = v.bytes;
  }
  // Every file is complete: commit them, the index last. Should a commit
  // fail, the files committed before it are removed again, so no partial
  // set of shards is left (a file replaced under --force stays replaced).
  std::vector<std::string> committed;
  auto roll_back = [&](Status failed) {
    for (const std::string& path : committed) env->RemoveFile(path).IgnoreError();
    return failed;
  };
  for (size_t k = 0; k < sinks.size(); ++k) {
    if (Status s = sinks[k]->Commit(); !s.ok()) return roll_back(s.WithPath(report.files[k].path));
    committed.push_back(report.files[k].path);
    report.files[k].bytes = sinks[k]->position();
  }
  if (!report.index.empty()) {
    if (Status s = WriteIndex(env, report.index, report.tensor_bytes, weight_map); !s.ok())
      return roll_back(s.WithPath(report.index));
  }
  if (!single_file) {
    ZF_ASSIGN_OR_RETURN(report.removed, RemoveStaleShards(env, out, report.format, written));
  }
  return report;
}

}  // namespace zerofold::ops
