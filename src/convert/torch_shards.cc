#include "output/folder.h"
#include "convert/torch_shards.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gather/plan.h"
#include "model/hf_folder.h"
#include "model/plain_values.h"
#include "model/select.h"
#include "pickle/encoder.h"
#include "plan/shrink_plan.h"
#include "shrink/cast.h"
#include "shrink/shrink.h"
#include "torch/archive_writer.h"
#include "torch/retarget.h"
#include "torch/storage_source.h"
#include "verify/verify.h"
#include "zip/entry_source.h"

namespace zerofold::convert {

namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// The input's records other than data.pkl and data/*, relative to its top folder.
Result<std::vector<torch::ExtraRecord>> ExtraRecords(const Input& in) {
  std::vector<torch::ExtraRecord> extras;
  for (const zip::Entry& e : in.ckpt.other_records) {
    Result<std::vector<std::byte>> bytes = zip::ReadEntry(*in.src, e, 1u << 20);
    if (!bytes.ok()) return Status(bytes.status()).WithRecord(e.name).WithPath(in.path);
    const std::string& top = in.ckpt.top_folder;
    extras.push_back({e.name.substr(top.empty() ? 0 : top.size() + 1), std::move(*bytes)});
  }
  return extras;
}

// Reads the torch file `back` and compares its tensors with `expected`
// (verify::VerifyOutput: names in order, dtype, shape, stride, flags and
// values), adding the counts to `report`.
Status VerifyShard(const Input& in, const torch::Checkpoint& expected, const RandomSource& back,
                   const ConvertOptions& options, ConvertReport& report) {
  ZF_ASSIGN_OR_RETURN(verify::VerifyReport v,
                      verify::VerifyOutput(*in.src, expected, back, options.read, options.buffer_bytes));
  report.verified_tensors += v.tensors;
  report.verified_bytes += v.bytes;
  return Status::OK();
}

// Checks an archive written, before its commit (verify).
using CheckWritten = std::function<Status(const RandomSource& written)>;

// Writes the tensors of `ckpt`, read from `in`'s source, reached from its
// root, as one shrunk (and cast) torch archive at `path` (dry run: writes
// nothing). Returns its size. Retargets `ckpt`'s tensors to the new storages.
// `check`, if set, reads the archive back before its commit; its error
// leaves the target as it was.
Result<uint64_t> WriteShard(Env* env, const Input& in, torch::Checkpoint& ckpt, const std::string& path,
                            std::span<const torch::ExtraRecord> extras, const ConvertOptions& options,
                            shrink::CastCopier& copier, const std::function<void(uint64_t)>& wrote,
                            const CheckWritten& check = nullptr) {
  const pickle::NodeId root = ckpt.root;
  ZF_ASSIGN_OR_RETURN(plan::ShrinkPlan plan, plan::PlanShrink(ckpt));
  ZF_ASSIGN_OR_RETURN(std::vector<shrink::StorageCast> casts, shrink::PlanStorageCasts(ckpt, plan, options.dtype));
  std::vector<torch::NewStorage> new_storages;
  std::vector<torch::StorageRecord> records;
  for (size_t i = 0; i < plan.storages.size(); ++i) {
    const shrink::StorageCast& c = casts[i];
    new_storages.push_back({plan.storages[i].key, c.out_nbytes, plan.storages[i].input_storage});
    records.push_back({plan.storages[i].key, c.out_nbytes});
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : plan.views) placements.push_back({v.output_storage, v.storage_offset});
  ZF_TRY(torch::RetargetTensors(ckpt, new_storages, placements, shrink::CastTargets(casts)));
  ZF_ASSIGN_OR_RETURN(std::vector<std::byte> pkl, pickle::Encode(ckpt.graph, root));
  torch::ArchiveContents contents;
  contents.top_folder = shrink::StemOf(path);
  contents.data_pkl = pkl;
  contents.storages = records;
  contents.extras = extras;
  if (options.read_plan != nullptr)
    for (const plan::OutputStorage& o : plan.storages)
      gather::AddStorageReads(ckpt.storages[o.input_storage], o.begin, o.end, in.path, options.read_plan);
  if (options.dry_run) return torch::TorchArchiveSize(contents);
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(path));
  torch::StorageSources sources(*in.src);
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    const plan::OutputStorage& o = plan.storages[index];
    const torch::Storage& s = ckpt.storages[o.input_storage];
    ZF_ASSIGN_OR_RETURN(const RandomSource* bytes, sources.For(s));
    return copier.Copy(*bytes, o.begin, o.nbytes(), casts[index], s.record,
                       [&](std::span<const std::byte> bytes) -> Status {
                         ZF_TRY(emit(bytes));
                         wrote(bytes.size());
                         return Status::OK();
                       });
  };
  Status written = torch::WriteTorchArchive(contents, fill, sink.get());
  if (written.ok()) written = sources.Finish().WithPath(in.path);
  if (!written.ok()) return written.WithPath(path);
  if (check) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> back, sink->OpenWritten());
    ZF_TRY(check(*back));
  }
  ZF_TRY(sink->Commit());
  return sink->position();
}

// The whole checkpoint as one pytorch_model.bin, through ShrinkFile.
Result<ConvertReport> WriteSingle(Env* env, const std::string& input, const std::string& output,
                                  const ConvertOptions& options) {
  shrink::ShrinkOptions shrink;
  shrink.read = options.read;
  shrink.keep_unsafe = options.keep_unsafe;
  shrink.dry_run = options.dry_run;
  shrink.buffer_bytes = options.buffer_bytes;
  shrink.progress = options.progress;
  shrink.read_plan = options.read_plan;
  shrink.dtype = options.dtype;
  shrink.select = options.select;
  shrink.only = options.only;
  shrink.convert = options.convert;
  shrink.verify = options.verify;
  const std::string name = output::SingleFileName(output::ShardFormat::kTorch);
  ZF_ASSIGN_OR_RETURN(shrink::ShrinkReport r, shrink::ShrinkFile(env, input, model::JoinPath(output, name), shrink));
  ConvertReport report;
  report.inputs = {input};
  report.input_bytes = r.input_file_bytes;
  report.files.push_back({r.output, r.output_file_bytes, r.tensors});
  report.verified_tensors = r.verified_tensors;
  report.verified_bytes = r.verified_bytes;
  for (const auto& [tensor, nbytes] : r.tensor_nbytes) report.total_size += nbytes;
  for (const std::string& g : r.unsafe_globals)
    report.warnings.emplace_back(input, "carried unsafe global " + g + " through unexecuted (--keep-unsafe)");
  return report;
}

}  // namespace

Result<ConvertReport> ShardTorchFile(Env* env, const std::string& input, const std::string& output,
                                     const ConvertOptions& options) {
  ZF_ASSIGN_OR_RETURN(Input in, ReadInput(env, input, options));
  torch::Checkpoint& ckpt = in.ckpt;
  Result<output::TieGroups> groups = output::FindTieGroups(ckpt);
  if (!groups.ok()) return Status(groups.status()).WithPath(input);
  // A group's bytes count at its first name: it becomes one storage.
  std::vector<output::ShardItem> items;
  std::vector<uint64_t> name_bytes;
  std::vector<bool> counted(groups->members.size(), false);
  for (const torch::Tensor& t : ckpt.tensors) {
    Result<torch::DType> out = shrink::OutputDType(t.dtype, options.dtype);
    if (!out.ok()) return Status(out.status()).WithRecord(t.name).WithPath(input);
    const uint32_t g = groups->group_of[&t - ckpt.tensors.data()];
    const uint64_t bytes = counted[g] ? 0 : groups->group_bytes[g] / torch::Info(t.dtype).itemsize * torch::Info(*out).itemsize;
    counted[g] = true;
    items.push_back({bytes, g});
    name_bytes.push_back(shrink::OutputNbytes(t, *out));
  }
  output::ShardPlan plan = output::PlanShards(items, options.max_shard_bytes);
  const size_t n = plan.shards.size();
  const output::PartSpec& part = options.part;
  ConvertOptions plan_only = options;
  plan_only.dry_run = true;
  plan_only.verify = false;
  // Each file's reads, planned with it; those of the files this run writes
  // go to options.read_plan.
  std::vector<io::ReadPlan> file_reads;
  // Every file is planned first (exact sizes): the checks of the folder OUT
  // (output/folder.h CheckFolderOutput) and the parts need them.
  output::PartFiles files;
  output::FolderTail tail;
  ConvertReport report;
  std::vector<std::pair<std::string, std::string>> weight_map;
  std::vector<torch::ExtraRecord> extras;
  const std::vector<torch::Tensor> all = ckpt.tensors;
  const std::vector<torch::Storage> all_storages = ckpt.storages;
  // Shard k: a dict of its tensors, with only the storages it reaches.
  auto select_shard = [&](torch::Checkpoint& c, size_t k) -> Status {
    c.tensors.clear();
    c.storages = all_storages;
    c.root = c.graph.AddDict();
    for (uint32_t i : plan.shards[k]) {
      c.tensors.push_back(all[i]);
      c.graph.SetItem(c.root, c.graph.AddStr(all[i].name), all[i].node);
    }
    Status reach = model::DropUnreachableStorages(c);
    return reach.ok() ? reach : reach.WithPath(input);
  };
  shrink::CastCopier copier(std::max<size_t>(options.buffer_bytes, 4096));
  auto nowhere = [](uint64_t) {};
  if (n <= 1) {
    // One file, as ShrinkFile writes it.
    plan_only.read_plan = &file_reads.emplace_back();
    ZF_ASSIGN_OR_RETURN(report, WriteSingle(env, input, output, plan_only));
    files.paths = {report.files[0].path};
    files.bytes = {report.files[0].bytes};
  } else {
    if (!ckpt.unsafe_globals.empty() && !options.keep_unsafe)
      return Status::Unsafe("pickle references globals that would run code when torch.load reads it: " +
                            Join(ckpt.unsafe_globals) + " (--keep-unsafe carries them through unexecuted)")
          .WithPath(input);
    report.inputs = {input};
    report.input_bytes = in.src->size();
    for (const std::string& g : ckpt.unsafe_globals)
      report.warnings.emplace_back(input, "carried unsafe global " + g + " through unexecuted (--keep-unsafe)");
    model::PlainValues values = model::CollectPlainValues(ckpt);
    std::vector<std::string> dropped = values.skipped;
    for (const auto& [key, text] : values.entries) dropped.push_back(key);
    if (!dropped.empty())
      report.warnings.emplace_back(input, "not written (shards hold tensors only): " + Join(dropped));
    ZF_ASSIGN_OR_RETURN(extras, ExtraRecords(in));
    for (size_t k = 0; k < n; ++k) {
      const std::string name = output::ShardFileName(output::ShardFormat::kTorch, k + 1, n);
      files.paths.push_back(model::JoinPath(output, name));
      // Each shard planned on a copy of the checkpoint: writing retargets its tensors.
      torch::Checkpoint copy = ckpt;
      ZF_TRY(select_shard(copy, k));
      plan_only.read_plan = &file_reads.emplace_back();
      Result<uint64_t> size = WriteShard(env, in, copy, files.paths[k], extras, plan_only, copier, nowhere);
      if (!size.ok()) return Status(size.status()).WithPath(input);
      files.bytes.push_back(*size);
      for (uint32_t i : plan.shards[k]) {
        weight_map.emplace_back(all[i].name, name);
        report.total_size += name_bytes[i];
      }
    }
    tail.index = model::JoinPath(output, output::IndexFileName(output::ShardFormat::kTorch));
    tail.index_text = output::IndexText(tail.index, report.total_size, weight_map);
  }
  // Shards written afresh replace an earlier save whole, as save_pretrained does.
  std::vector<std::string> planned = files.paths;
  if (!tail.index.empty()) planned.push_back(tail.index);
  ZF_ASSIGN_OR_RETURN(tail.stale, output::EarlierSave(env, output, output::ShardFormat::kTorch, planned));
  ZF_TRY(output::SelectPartFiles(env, part, options.force, options.dry_run, files));
  std::vector<bool> tail_in_place;
  ZF_TRY(output::CheckFolderOutput(env, output, {input}, part, files, tail, options.force, options.dry_run,
                                   &tail_in_place));
  if (part.kind != output::PartSpec::Kind::kAll) report.parts = files;
  if (options.read_plan != nullptr)
    for (size_t k = 0; k < file_reads.size() && k < files.write.size(); ++k)
      if (files.write[k])
        options.read_plan->Append(file_reads[k]);
  ConvertOptions writing = options;
  writing.read_plan = nullptr;
  if (options.dry_run) {
    if (n > 1) {
      for (size_t k = 0; k < n; ++k) report.files.push_back({files.paths[k], files.bytes[k], plan.shards[k].size()});
      report.index = tail.index;
    }
    return report;
  }

  output::OutputRollback rollback(env);
  if (part.kind != output::PartSpec::Kind::kFinish) ZF_TRY(rollback.CreateDirs(output));
  if (n <= 1) {
    if (files.write[0]) {
      ZF_ASSIGN_OR_RETURN(report, WriteSingle(env, input, output, writing));
      if (part.kind == output::PartSpec::Kind::kAll) rollback.Committed(files.paths[0]);
      if (part.kind != output::PartSpec::Kind::kAll) report.parts = files;
    } else if (options.verify && output::VerifiesFile(part, files, 0)) {
      // Found complete: checked against the input as read (select, only applied).
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> back, env->OpenRandom(files.paths[0]));
      ZF_TRY(VerifyShard(in, ckpt, *back, options, report));
    }
  } else {
    uint64_t total = 0;
    for (size_t k = 0; k < n; ++k)
      if (files.write[k]) total += plan.bytes[k];
    uint64_t done = 0;
    auto wrote = [&](uint64_t n) {
      done += n;
      if (options.progress) options.progress(done, total);
    };
    for (size_t k = 0; k < n; ++k) {
      uint64_t size = files.bytes[k];
      if (files.write[k]) {
        ZF_TRY(select_shard(ckpt, k));
        CheckWritten check;
        torch::Checkpoint expected;
        if (options.verify) {
          expected = ckpt;  // before WriteShard retargets it
          check = [&](const RandomSource& back) { return VerifyShard(in, expected, back, options, report); };
        }
        Result<uint64_t> wrote_size = WriteShard(env, in, ckpt, files.paths[k], extras, writing, copier, wrote, check);
        if (!wrote_size.ok()) return Status(wrote_size.status()).WithPath(input);
        size = *wrote_size;
        if (part.kind == output::PartSpec::Kind::kAll) rollback.Committed(files.paths[k]);
      } else if (options.verify && output::VerifiesFile(part, files, k)) {
        // A file found complete (a part's own; finish: every file) is
        // checked as a written one is.
        ZF_TRY(select_shard(ckpt, k));
        ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> back, env->OpenRandom(files.paths[k]));
        ZF_TRY(VerifyShard(in, ckpt, *back, options, report));
      }
      report.files.push_back({files.paths[k], size, plan.shards[k].size()});
    }
  }
  if (part.kind != output::PartSpec::Kind::kPart) {  // the index and the removals are finish's
    report.index = tail.index;
    ZF_TRY(output::WriteTail(env, output, tail, tail_in_place, options.buffer_bytes, &rollback, nullptr,
                             &report.removed));
  }
  rollback.Keep();
  return report;
}

}  // namespace zerofold::convert
