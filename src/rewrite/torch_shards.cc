#include "output/folder.h"
#include "rewrite/torch_shards.h"

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
#include "pickle/safety.h"
#include "rewrite/cast.h"
#include "rewrite/prepare.h"
#include "rewrite/shrink.h"
#include "torch/archive_writer.h"
#include "torch/storage_source.h"
#include "torch/retarget.h"
#include "torch/storage_source.h"
#include "verify/verify.h"
#include "zip/entry_source.h"

namespace zerofold::rewrite {

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
  torch::RecordLittleEndian(extras);  // storages are written as torch loads them
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

// One shard's archive: its checkpoint's storages planned exactly sized
// (and cast), its tensors retargeted to them, data.pkl encoded.
struct ShardArchive {
  plan::ShrinkPlan plan;
  std::vector<StorageCast> casts;
  std::vector<torch::StorageRecord> records;
  std::vector<std::byte> data_pkl;
  torch::ArchiveContents contents;  // points into the fields above and the extras
};

// Plans the archive at `path` of the tensors of `ckpt` reached from its
// root. Retargets `ckpt`'s tensors to the new storages.
Result<std::unique_ptr<ShardArchive>> PlanShard(torch::Checkpoint& ckpt, const std::string& path,
                                                std::span<const torch::ExtraRecord> extras,
                                                const ConvertOptions& options) {
  auto a = std::make_unique<ShardArchive>();
  const pickle::NodeId root = ckpt.root;
  ZF_ASSIGN_OR_RETURN(a->plan, plan::PlanShrink(ckpt));
  ZF_ASSIGN_OR_RETURN(a->casts, PlanStorageCasts(ckpt, a->plan, options.dtype));
  std::vector<torch::NewStorage> new_storages;
  for (size_t i = 0; i < a->plan.storages.size(); ++i) {
    const StorageCast& c = a->casts[i];
    new_storages.push_back({a->plan.storages[i].key, c.out_nbytes, a->plan.storages[i].input_storage});
    a->records.push_back({a->plan.storages[i].key, c.out_nbytes});
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : a->plan.views) placements.push_back({v.output_storage, v.storage_offset});
  ZF_TRY(torch::RetargetTensors(ckpt, new_storages, placements, CastTargets(a->casts)));
  ZF_ASSIGN_OR_RETURN(a->data_pkl, pickle::Encode(ckpt.graph, root));
  a->contents.top_folder = StemOf(path);
  a->contents.data_pkl = a->data_pkl;
  a->contents.storages = a->records;
  a->contents.extras = extras;
  return a;
}

// The shrink options of the whole checkpoint as one pytorch_model.bin.
ShrinkOptions SingleFileOptions(const ConvertOptions& options) {
  ShrinkOptions shrink;
  shrink.read = options.read;
  shrink.keep_unsafe = options.keep_unsafe;
  shrink.dry_run = options.dry_run;
  shrink.buffer_bytes = options.buffer_bytes;
  shrink.dtype = options.dtype;
  shrink.select = options.select;
  shrink.only = options.only;
  shrink.convert = options.convert;
  shrink.verify = options.verify;
  return shrink;
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
    Result<torch::DType> out = OutputDType(t.dtype, options.dtype);
    if (!out.ok()) return Status(out.status()).WithRecord(t.name).WithPath(input);
    const uint32_t g = groups->group_of[&t - ckpt.tensors.data()];
    const uint64_t bytes = counted[g] ? 0 : groups->group_bytes[g] / torch::Info(t.dtype).itemsize * torch::Info(*out).itemsize;
    counted[g] = true;
    items.push_back({bytes, g});
    name_bytes.push_back(OutputNbytes(t, *out));
  }
  output::ShardPlan plan = output::PlanShards(items, options.max_shard_bytes);
  const size_t n = plan.shards.size();
  const output::PartSpec& part = options.part;
  // Every file is planned first (exact sizes, reads), then written through
  // the one protocol (output/file_set.h).
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
  output::FileSet set;
  set.out = output;
  set.folder = true;
  set.format = output::ShardFormat::kTorch;
  set.inputs = {input};
  std::shared_ptr<ShrinkReport> single;  // n <= 1: the file's report, filled as it is written
  if (n <= 1) {
    // One file, as ShrinkFile writes it.
    const std::string path = model::JoinPath(output, output::SingleFileName(output::ShardFormat::kTorch));
    ZF_ASSIGN_OR_RETURN(PlannedShrink p, PlanShrinkFile(env, input, path, SingleFileOptions(options)));
    single = p.report;
    set.files.push_back(std::move(p.file));
    report.inputs = {input};
    report.input_bytes = single->input_file_bytes;
    for (const auto& [tensor, nbytes] : single->tensor_nbytes) report.total_size += nbytes;
    for (const std::string& g : single->unsafe_globals)
      report.warnings.emplace_back(input, "carried unsafe global " + g + " through unexecuted (--keep-unsafe)");
  } else {
    if (!ckpt.unsafe_globals.empty() && !options.keep_unsafe)
      return pickle::RefuseUnsafe(ckpt.unsafe_globals, pickle::kKeepCarries).WithPath(input);
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
      output::PlannedFile& f = set.files.emplace_back();
      f.path = model::JoinPath(output, name);
      // Each shard planned on a copy of the checkpoint: planning retargets its tensors.
      torch::Checkpoint copy = ckpt;
      ZF_TRY(select_shard(copy, k));
      Result<std::unique_ptr<ShardArchive>> a = PlanShard(copy, f.path, extras, options);
      if (!a.ok()) return Status(a.status()).WithPath(input);
      f.bytes = torch::TorchArchiveSize((*a)->contents);
      f.payload = plan.bytes[k];
      for (const plan::OutputStorage& o : (*a)->plan.storages)
        gather::AddStorageReads(copy.storages[o.input_storage], o.begin, o.end, in.path, &f.reads);
      // Written and checked from the shard selected again: one checkpoint
      // copy at a time.
      f.write = [&, k, path = f.path](Sink& sink, const output::WroteBytes& wrote) -> Status {
        torch::Checkpoint shard = ckpt;
        ZF_TRY(select_shard(shard, k));
        Result<std::unique_ptr<ShardArchive>> planned = PlanShard(shard, path, extras, options);
        if (!planned.ok()) return Status(planned.status()).WithPath(input);
        const ShardArchive& archive = **planned;
        CastCopier copier(std::max<size_t>(options.buffer_bytes, 4096));
        return WriteShrunkArchive(*in.src, shard.storages, archive.plan, archive.casts, archive.contents,
                                          copier, sink, wrote, torch::StorageSources::Bytes::kAsTorchLoads);
      };
      f.verify = [&, k](const RandomSource& back, const output::WroteBytes&) -> Status {
        torch::Checkpoint expected = ckpt;
        ZF_TRY(select_shard(expected, k));
        return VerifyShard(in, expected, back, options, report);
      };
      for (uint32_t i : plan.shards[k]) {
        weight_map.emplace_back(all[i].name, name);
        report.total_size += name_bytes[i];
      }
    }
    set.tail.index = model::JoinPath(output, output::IndexFileName(output::ShardFormat::kTorch));
    set.tail.index_text = output::IndexText(set.tail.index, report.total_size, weight_map);
  }
  output::FileSetOptions writing = output::FileSetOptionsOf(options);
  writing.part = part;
  writing.force = options.force;
  writing.progress = options.progress;
  ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
  for (size_t k = 0; k < set.files.size(); ++k) {
    const size_t tensors = n <= 1 ? single->tensors : plan.shards[k].size();
    report.files.push_back({set.files[k].path, written.stored_bytes[k], tensors});
  }
  if (single != nullptr) {
    report.verified_tensors = single->verified_tensors;
    report.verified_bytes = single->verified_bytes;
  }
  if (part.kind != output::PartSpec::Kind::kAll) report.parts = std::move(written.parts);
  if (part.kind != output::PartSpec::Kind::kPart) report.index = set.tail.index;  // the index is finish's
  report.removed = std::move(written.removed);
  return report;
}

}  // namespace zerofold::rewrite
