#include "output/folder.h"
#include "convert/torch_shards.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/hf_folder.h"
#include "model/plain_values.h"
#include "model/select.h"
#include "output/committed_files.h"
#include "pickle/encoder.h"
#include "plan/shrink_plan.h"
#include "shrink/cast.h"
#include "shrink/shrink.h"
#include "torch/archive_writer.h"
#include "torch/retarget.h"
#include "torch/storage_source.h"
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

// Writes the tensors of `ckpt`, read from `in`'s source, reached from its
// root, as one shrunk (and cast) torch archive at `path` (dry run: writes
// nothing). Returns its size. Retargets `ckpt`'s tensors to the new storages.
Result<uint64_t> WriteShard(Env* env, const Input& in, torch::Checkpoint& ckpt, const std::string& path,
                            std::span<const torch::ExtraRecord> extras, const ConvertOptions& options,
                            shrink::CastCopier& copier, const std::function<void(uint64_t)>& wrote) {
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
  shrink.dtype = options.dtype;
  shrink.select = options.select;
  const std::string name = output::SingleFileName(output::ShardFormat::kTorch);
  if (!options.dry_run) ZF_TRY(env->CreateDirs(output));
  ZF_ASSIGN_OR_RETURN(shrink::ShrinkReport r, shrink::ShrinkFile(env, input, model::JoinPath(output, name), shrink));
  ConvertReport report;
  report.inputs = {input};
  report.input_bytes = r.input_file_bytes;
  report.files.push_back({r.output, r.output_file_bytes, r.tensors});
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
  // No file written or removed (an earlier save in OUT) may be the input by
  // another name.
  std::vector<std::string> targets;
  const size_t n = plan.shards.size();
  if (n <= 1) targets.push_back(model::JoinPath(output, output::SingleFileName(output::ShardFormat::kTorch)));
  for (size_t k = 0; n > 1 && k < n; ++k)
    targets.push_back(model::JoinPath(output, output::ShardFileName(output::ShardFormat::kTorch, k + 1, n)));
  if (n > 1) targets.push_back(model::JoinPath(output, output::IndexFileName(output::ShardFormat::kTorch)));
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> earlier, output::EarlierSave(env, output, output::ShardFormat::kTorch));
  targets.insert(targets.end(), earlier.begin(), earlier.end());
  ZF_TRY(output::RefuseInputTargets(env, {input}, targets, "would replace an input file"));
  const output::PartSpec& part = options.part;
  ConvertOptions plan_only = options;
  plan_only.dry_run = true;
  if (n <= 1) {
    // One file, as ShrinkFile writes it; with --part, planned first, then
    // written by the part it falls to.
    ZF_ASSIGN_OR_RETURN(ConvertReport report,
                        WriteSingle(env, input, output, part.kind == output::PartSpec::Kind::kAll ? options : plan_only));
    if (part.kind != output::PartSpec::Kind::kAll) {
      output::PartFiles files;
      files.paths = {report.files[0].path};
      files.bytes = {report.files[0].bytes};
      ZF_TRY(output::SelectPartFiles(env, part, options.force, options.dry_run, files));
      if (files.write[0] && !options.dry_run) {
        ZF_ASSIGN_OR_RETURN(report, WriteSingle(env, input, output, options));
      }
      report.parts = std::move(files);
    }
    if (options.dry_run || part.kind == output::PartSpec::Kind::kPart) return report;
    ZF_ASSIGN_OR_RETURN(report.removed,
                        output::RemoveStaleShards(env, output, output::ShardFormat::kTorch, {output::SingleFileName(output::ShardFormat::kTorch)}));
    return report;
  }

  if (!ckpt.unsafe_globals.empty() && !options.keep_unsafe)
    return Status::Unsafe("pickle references globals that would run code when torch.load reads it: " +
                          Join(ckpt.unsafe_globals) + " (--keep-unsafe carries them through unexecuted)")
        .WithPath(input);
  ConvertReport report;
  report.inputs = {input};
  report.input_bytes = in.src->size();
  for (const std::string& g : ckpt.unsafe_globals)
    report.warnings.emplace_back(input, "carried unsafe global " + g + " through unexecuted (--keep-unsafe)");
  model::PlainValues values = model::CollectPlainValues(ckpt);
  std::vector<std::string> dropped = values.skipped;
  for (const auto& [key, text] : values.entries) dropped.push_back(key);
  if (!dropped.empty())
    report.warnings.emplace_back(input, "not written (shards hold tensors only): " + Join(dropped));
  ZF_ASSIGN_OR_RETURN(std::vector<torch::ExtraRecord> extras, ExtraRecords(in));

  // Shard k: a dict of its tensors, with only the storages it reaches.
  const std::vector<torch::Tensor> all = std::move(ckpt.tensors);
  const std::vector<torch::Storage> all_storages = ckpt.storages;
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
  // With --part, every shard is planned first (exact sizes), each on a copy
  // of the checkpoint, since writing retargets its tensors.
  output::PartFiles files;
  for (size_t k = 0; k < n; ++k) files.paths.push_back(model::JoinPath(output, output::ShardFileName(output::ShardFormat::kTorch, k + 1, n)));
  files.bytes.assign(n, 0);
  if (part.kind != output::PartSpec::Kind::kAll) {
    for (size_t k = 0; k < n; ++k) {
      torch::Checkpoint copy = ckpt;
      ZF_TRY(select_shard(copy, k));
      Result<uint64_t> size = WriteShard(env, in, copy, files.paths[k], extras, plan_only, copier, nowhere);
      if (!size.ok()) return Status(size.status()).WithPath(input);
      files.bytes[k] = *size;
    }
  }
  ZF_TRY(output::SelectPartFiles(env, part, options.force, options.dry_run, files));
  if (part.kind != output::PartSpec::Kind::kAll) report.parts = files;

  if (!options.dry_run && part.kind != output::PartSpec::Kind::kFinish) ZF_TRY(env->CreateDirs(output));
  uint64_t total = 0;
  for (size_t k = 0; k < n; ++k)
    if (files.write[k]) total += plan.bytes[k];
  uint64_t done = 0;
  auto wrote = [&](uint64_t n) {
    done += n;
    if (options.progress) options.progress(done, total);
  };
  std::vector<std::pair<std::string, std::string>> weight_map;
  std::set<std::string> written;
  // The shards are a save once the index is in place; a failure or
  // cancellation before that removes the shards this run wrote.
  output::CommittedFiles committed(env, part.kind != output::PartSpec::Kind::kPart);
  for (size_t k = 0; k < n; ++k) {
    const std::string name = output::ShardFileName(output::ShardFormat::kTorch, k + 1, n);
    for (uint32_t i : plan.shards[k]) {
      weight_map.emplace_back(all[i].name, name);
      report.total_size += name_bytes[i];
    }
    written.insert(name);
    uint64_t size = files.bytes[k];
    if (files.write[k]) {
      ZF_TRY(select_shard(ckpt, k));
      Result<uint64_t> wrote_size = WriteShard(env, in, ckpt, files.paths[k], extras, options, copier, wrote);
      if (!wrote_size.ok()) return Status(wrote_size.status()).WithPath(input);
      if (!options.dry_run) committed.Add(files.paths[k]);
      size = *wrote_size;
    }
    report.files.push_back({files.paths[k], size, plan.shards[k].size()});
  }
  if (part.kind == output::PartSpec::Kind::kPart) return report;  // the index and the removals are finish's
  report.index = model::JoinPath(output, output::IndexFileName(output::ShardFormat::kTorch));
  written.insert(output::IndexFileName(output::ShardFormat::kTorch));
  if (options.dry_run) return report;
  ZF_TRY(output::WriteIndex(env, report.index, report.total_size, weight_map));
  committed.Keep();
  ZF_ASSIGN_OR_RETURN(report.removed, output::RemoveStaleShards(env, output, output::ShardFormat::kTorch, written));
  return report;
}

}  // namespace zerofold::convert
