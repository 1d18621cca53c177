#include "gather/output.h"

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
#include "output/folder.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "output/target.h"

namespace zerofold::gather {

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

  // With --part, which part writes each file (output/parts.h).
  const output::PartSpec& part = options.part;
  output::PartFiles part_files;
  for (const MergeOutputFile& f : report->files) {
    part_files.paths.push_back(f.path);
    part_files.bytes.push_back(f.bytes);
  }
  ZF_TRY(output::SelectPartFiles(env, part, options.force, options.dry_run, part_files));
  if (part.kind != output::PartSpec::Kind::kAll) report->parts = part_files;

  // Refuse to replace files unasked, and never write onto an input, by any
  // name (output/target.h). A folder OUT gets, after the weights, the
  // copies of the checkpoint's model files, the index, and the removal of an
  // earlier save's other files, as save_pretrained does.
  output::FolderTail tail;
  std::vector<bool> tail_in_place;
  if (target.single_file) {
    if (!options.dry_run) {
      ZF_TRY(output::CheckTargets(env, inputs, {{out}, {}}, options.force));
      ZF_TRY(output::CheckFreeSpace(env, out, report->files[0].bytes));
    }
  } else {
    tail.copy_from = target.copy_from;
    tail.copies = target.copies;
    if (!report->index.empty()) {
      tail.index = report->index;
      tail.index_text = output::IndexText(report->index, report->tensor_bytes, weight_map);
    }
    std::vector<std::string> planned = part_files.paths;
    if (!tail.index.empty()) planned.push_back(tail.index);
    ZF_ASSIGN_OR_RETURN(tail.stale, output::EarlierSave(env, out, report->format, planned));
    ZF_TRY(output::CheckFolderOutput(env, out, inputs, part, part_files, tail, options.force, options.dry_run,
                                     &tail_in_place));
  }
  if (options.read_plan != nullptr) {
    for (size_t k = 0; k < report->files.size(); ++k) {
      if (!part_files.write[k]) continue;
      const std::vector<size_t>& tensors =
          report->format == MergeFormat::kTorch ? torch_files[k].storage_tensor : st_files[k].tensor_of;
      for (size_t t : tensors) AddTensorReads(plan, plan.tensors[t], options.read_plan);
    }
    ZF_TRY(output::AddTailReads(env, tail, part, options.read_plan));
  }
  if (options.dry_run) return Status::OK();
  ZF_TRY(CheckDeflatedRecords(plan));

  TensorAssembler assembler(plan.sources, options.buffer_bytes);
  // --verify: reads back files[k] for each k of `ks` through open_back(k)
  // and compares every tensor with its sources, before any commit.
  auto verify_files = [&](const std::vector<size_t>& ks,
                          const std::function<Result<std::unique_ptr<RandomSource>>(size_t)>& open_back) -> Status {
    std::vector<std::unique_ptr<RandomSource>> backs;
    std::vector<const RandomSource*> readers;
    std::vector<MergeOutputFile> checked_files;
    uint64_t verify_total = 0;
    for (size_t k : ks) {
      Result<std::unique_ptr<RandomSource>> back = open_back(k);
      if (!back.ok()) return Status(back.status()).WithPath(report->files[k].path);
      backs.push_back(std::move(*back));
      readers.push_back(backs.back().get());
      checked_files.push_back(report->files[k]);
      for (size_t i : report->files[k].entries) verify_total += entry_bytes[i];
    }
    uint64_t checked = 0;
    auto verify_progress = [&](uint64_t n) {
      checked += n;
      if (options.progress) options.progress("verify", checked, verify_total);
    };
    ZF_ASSIGN_OR_RETURN(VerifyResult v, VerifyMergeOutput(readers, plan, layout, checked_files, report->format,
                                                          assembler, options.read, options.buffer_bytes,
                                                          verify_progress));
    report->verified = true;
    report->verified_tensors = v.tensors;
    report->verified_bytes = v.bytes;
    return Status::OK();
  };

  if (part.kind == output::PartSpec::Kind::kFinish) {
    // Every file was written by its part (SelectPartFiles checked the
    // sizes; --verify checks every file's values). The index and the
    // removal of an earlier save's other files come last, so a half-done
    // output never has an index.
    if (options.verify) {
      std::vector<size_t> all(report->files.size());
      for (size_t k = 0; k < all.size(); ++k) all[k] = k;
      ZF_TRY(verify_files(all, [&](size_t k) { return env->OpenRandom(report->files[k].path); }));
    }
    return output::WriteTail(env, out, tail, tail_in_place, options.buffer_bytes, nullptr, &report->copied,
                             &report->removed);
  }

  output::OutputRollback rollback(env);
  if (!target.single_file) ZF_TRY(rollback.CreateDirs(out));
  uint64_t done = 0;
  uint64_t total = 0;
  for (size_t k = 0; k < report->files.size(); ++k)
    if (part_files.write[k])
      for (size_t i : report->files[k].entries) total += entry_bytes[i];
  WriteProgress progress = [&](uint64_t n) {
    done += n;
    if (options.progress) options.progress("merge", done, total);
  };
  std::vector<size_t> to_write;  // indexes into report->files
  std::vector<std::unique_ptr<AtomicFileSink>> sinks;
  for (size_t k = 0; k < report->files.size(); ++k) {
    if (!part_files.write[k]) continue;
    const MergeOutputFile& f = report->files[k];
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(f.path));
    // The file sink writes on its own thread (io/flush_behind_writer.h); Flush
    // ends that and frees its buffers before the next file starts.
    Status written = report->format == MergeFormat::kTorch
                         ? WriteTorchFile(torch_files[k], plan, assembler, sink.get(), progress)
                         : WriteSafetensorsFile(st_files[k], plan, assembler, sink.get(), progress);
    if (written.ok()) written = sink->Flush();
    if (!written.ok()) return written.WithPath(f.path);
    sinks.push_back(std::move(sink));
    to_write.push_back(k);
  }
  report->bytes_read = assembler.bytes_read();  // before verify reads more
  if (options.verify) {
    // Before any commit: a mismatch leaves every target as it was. A part
    // checks its files, those it skipped as complete too.
    std::vector<size_t> ks;
    std::vector<size_t> sink_of(report->files.size(), SIZE_MAX);
    for (size_t k = 0, next_sink = 0; k < report->files.size(); ++k) {
      if (part_files.write[k]) sink_of[k] = next_sink++;
      if (output::VerifiesFile(part, part_files, k)) ks.push_back(k);
    }
    ZF_TRY(verify_files(ks, [&](size_t k) {
      return sink_of[k] != SIZE_MAX ? sinks[sink_of[k]]->OpenWritten() : env->OpenRandom(report->files[k].path);
    }));
  }
  // Every file is complete: commit them, then the copies and the index.
  // Should anything fail, the files committed before are removed again, so
  // no partial set of shards is left (output/target.h OutputRollback); a
  // part's files are complete, and a rerun skips them.
  for (size_t j = 0; j < sinks.size(); ++j) {
    MergeOutputFile& f = report->files[to_write[j]];
    if (Status s = sinks[j]->Commit(); !s.ok()) return s.WithPath(f.path);
    if (part.kind == output::PartSpec::Kind::kAll) rollback.Committed(f.path);
    f.bytes = sinks[j]->position();
  }
  if (part.kind != output::PartSpec::Kind::kPart && !target.single_file) {
    ZF_TRY(output::WriteTail(env, out, tail, tail_in_place, options.buffer_bytes, &rollback, &report->copied,
                             &report->removed));
  }
  rollback.Keep();
  return Status::OK();
}

}  // namespace zerofold::gather
