#include "shrink/shrink.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "model/hf_folder.h"
#include "output/folder.h"
#include "output/parts.h"
#include "verify/verify.h"

namespace zerofold::shrink {

namespace {

// The name of the torch file a checkpoint file of a folder becomes:
// safetensors names as transformers names torch files ("model.safetensors"
// -> "pytorch_model.bin", "model-00001-of-00002.safetensors" ->
// "pytorch_model-00001-of-00002.bin", "x.safetensors" -> "x.bin"); torch
// names unchanged.
std::string TorchName(const std::string& name) {
  const std::string ext = ".safetensors";
  if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) return name;
  std::string stem = name.substr(0, name.size() - ext.size());
  if (stem == "model" || stem.rfind("model-", 0) == 0) stem = "pytorch_" + stem;
  return stem + ".bin";
}

}  // namespace

Result<FolderReport> ShrinkFolder(Env* env, const std::string& input, const std::string& output,
                                  const ShrinkOptions& options, const output::PartSpec& part, bool force) {
  ZF_ASSIGN_OR_RETURN(model::ModelFiles files, model::ResolveModelPath(env, input));
  if (files.folder.empty()) return Status::InvalidArgument("not a folder").WithPath(input);
  // The folder's torch checkpoints: its torch index's shards, or its
  // pytorch_model.bin; without either, its safetensors (convert: each
  // shard becomes the torch shard of the same number).
  // The same choice as FolderCheckpoints (convert/convert.h).
  auto index_named = [&](const char* name) -> const model::ShardIndex* {
    for (const model::ShardIndex& i : files.indexes)
      if (i.path == model::JoinPath(input, name)) return &i;
    return nullptr;
  };
  const model::ShardIndex* torch_index = index_named(model::kTorchIndexName);
  const bool torch_single = env->FileExists(model::JoinPath(input, model::kTorchSingleName));
  const model::ShardIndex* index =
      torch_index != nullptr || torch_single ? torch_index : index_named(model::kSafetensorsIndexName);
  const bool from_safetensors = torch_index == nullptr && !torch_single;
  std::vector<std::string> shards;  // the files rewritten, each into output/TorchName(its name)
  if (index != nullptr) {
    for (const std::string& shard : index->Shards()) shards.push_back(model::JoinPath(input, shard));
  } else {
    shards.push_back(model::JoinPath(input, from_safetensors ? model::kSafetensorsSingleName : model::kTorchSingleName));
  }
  const bool in_place = input == output;
  // A pytorch_model.bin beside the index is a checkpoint too (transformers
  // loads it first): shrunk, not copied as is. Its tensors do not count in
  // the index's total_size.
  std::string single_beside_index;
  if (index != nullptr && !from_safetensors) {
    std::string single = model::JoinPath(input, model::kTorchSingleName);
    if (std::find(shards.begin(), shards.end(), single) == shards.end() && env->FileExists(single) &&
        !env->IsDirectory(single)) {
      shards.push_back(single);
      single_beside_index = single;
    }
  }
  auto target_of = [&](const std::string& in) { return model::JoinPath(output, TorchName(in.substr(in.rfind('/') + 1))); };
  FolderReport report;
  // Every shard is planned first (metadata only): its exact size, for the
  // checks of the folder OUT (output/folder.h CheckFolderOutput) and for
  // --part, which divides the output shards by their planned bytes.
  std::vector<ShrinkReport> planned;
  std::vector<io::ReadPlan> shard_reads;  // each shard's, planned with it
  output::PartFiles& out_files = report.parts;
  {
    ShrinkOptions plan_only = options;
    plan_only.dry_run = true;
    plan_only.verify = false;
    plan_only.only_none_ok = true;  // a shard may hold none of --only's names; the folder must not
    for (const std::string& shard : shards) {
      plan_only.read_plan = &shard_reads.emplace_back();
      ZF_ASSIGN_OR_RETURN(ShrinkReport r, ShrinkFile(env, shard, target_of(shard), plan_only));
      out_files.paths.push_back(target_of(shard));
      out_files.bytes.push_back(r.output_file_bytes);
      planned.push_back(std::move(r));
    }
  }
  if (!options.only.empty() &&
      std::all_of(planned.begin(), planned.end(), [](const ShrinkReport& r) { return r.tensors == 0; }))
    return Status::InvalidArgument("--only matches no tensor of the folder's shards").WithPath(input);
  ShrinkOptions shard_options = options;  // each shard as written: no plan (the folder planned above)
  shard_options.only_none_ok = true;
  shard_options.read_plan = nullptr;
  ZF_TRY(output::SelectPartFiles(env, part, force, options.dry_run, out_files));
  if (options.read_plan != nullptr)
    for (size_t k = 0; k < shard_reads.size(); ++k)
      if (out_files.write[k])
        options.read_plan->Append(shard_reads[k]);
  // The index: its weight_map, and total_size = the nbytes of every name in
  // it (tied names counted per name), from the planned shards.
  output::FolderTail tail;
  if (index != nullptr) {
    std::map<std::string, uint64_t> name_bytes;  // tensor name -> nbytes, over all shards
    for (size_t k = 0; k < shards.size(); ++k)
      if (shards[k] != single_beside_index)
        for (const auto& [name, nbytes] : planned[k].tensor_nbytes) name_bytes[name] = nbytes;
    model::ShardIndex out_index = *index;
    out_index.path = model::JoinPath(output, model::kTorchIndexName);
    if (!options.only.empty())  // names --only left out
      std::erase_if(out_index.weight_map, [&](const auto& entry) { return !name_bytes.count(entry.first); });
    uint64_t total = 0;
    for (auto& [name, file] : out_index.weight_map) {
      file = TorchName(file);
      auto it = name_bytes.find(name);
      if (it == name_bytes.end())
        return Status::Corrupt("weight_map names \"" + name + "\", which shard " + file + " does not hold")
            .WithPath(index->path);
      total += it->second;
    }
    out_index.total_size = total;
    report.total_size = total;
    report.index = out_index.path;
    tail.index = out_index.path;
    tail.index_text = model::FormatShardIndex(out_index);
  }
  std::vector<bool> tail_in_place;
  if (!in_place) {
    // IN's other files (config, tokenizer; not hidden ones), copied as they
    // are after the shards, in name order.
    std::set<std::string> handled;
    for (const std::string& shard : shards) handled.insert(shard.substr(shard.rfind('/') + 1));
    if (index != nullptr) handled.insert(index->path.substr(index->path.rfind('/') + 1));
    tail.copy_from = input;
    ZF_ASSIGN_OR_RETURN(tail.copies, output::OtherFileNames(env, input, handled));
    // An earlier save's other files go, as save_pretrained removes them.
    std::vector<std::string> written = out_files.paths;
    if (!tail.index.empty()) written.push_back(tail.index);
    ZF_ASSIGN_OR_RETURN(tail.stale, output::EarlierSave(env, output, output::ShardFormat::kTorch, written));
    // OUT's files must not be IN's by another name: each would be replaced
    // before (or after) it is read.
    std::vector<std::string> inputs = shards;
    if (index != nullptr) inputs.push_back(index->path);
    ZF_TRY(output::CheckFolderOutput(env, output, inputs, part, out_files, tail, force, options.dry_run, &tail_in_place));
    if (options.read_plan != nullptr) ZF_TRY(output::AddTailReads(env, tail, part, options.read_plan));
  } else if (!options.dry_run) {
    // In place, one shard at a time: each replacement must fit beside the
    // file it replaces (a symlinked shard's target may be on another file
    // system, as in a Hugging Face cache's blobs/).
    // A shard already compact is left untouched.
    for (size_t k = 0; k < shards.size(); ++k)
      if (!planned[k].copied_unchanged) ZF_TRY(output::CheckFreeSpace(env, shards[k], out_files.bytes[k]));
  }
  if (part.kind == output::PartSpec::Kind::kAll) out_files = output::PartFiles{};

  // A failing run removes what it wrote before the failure (in place, each
  // shard replaced its input: atomic per file, nothing to take back; a
  // part's files are complete, and a rerun skips them).
  output::OutputRollback rollback(env);
  // finish writes no shard: OUT holds the parts' shards already.
  if (!options.dry_run && !in_place && part.kind != output::PartSpec::Kind::kFinish) ZF_TRY(rollback.CreateDirs(output));
  const std::vector<bool> write = part.kind == output::PartSpec::Kind::kAll ? std::vector<bool>(shards.size(), true)
                                                                            : out_files.write;
  for (size_t k = 0; k < shards.size(); ++k) {
    if (!write[k]) {
      if (part.kind == output::PartSpec::Kind::kPart && out_files.file_parts[k] != part.index) continue;
      // Complete (a part's own; finish: every shard): with verify, checked
      // as a written shard is.
      if (options.verify && !options.dry_run) {
        ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> in, env->OpenRandom(shards[k]));
        ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> out, env->OpenRandom(target_of(shards[k])));
        ZF_ASSIGN_OR_RETURN(verify::VerifyReport v, verify::VerifyWritten(*in, *out, {options.read, options.buffer_bytes, options.select, options.only}));
        planned[k].verified = true;
        planned[k].verified_tensors = v.tensors;
        planned[k].verified_bytes = v.bytes;
      }
      report.shards.push_back(planned[k]);
      if (options.file_done) options.file_done(report.shards.back(), true);
      continue;
    }
    if (options.dry_run) {
      report.shards.push_back(planned[k]);
      if (options.file_done) options.file_done(report.shards.back(), false);
      continue;
    }
    ZF_ASSIGN_OR_RETURN(ShrinkReport r, ShrinkFile(env, shards[k], target_of(shards[k]), shard_options));
    if (!in_place && part.kind == output::PartSpec::Kind::kAll) rollback.Committed(target_of(shards[k]));
    report.shards.push_back(std::move(r));
    if (options.file_done) options.file_done(report.shards.back(), false);
  }
  if (part.kind == output::PartSpec::Kind::kPart) {  // the index and the rest are finish's
    report.index.clear();
    rollback.Keep();
    return report;
  }
  if (options.dry_run || in_place) {
    if (in_place && !options.dry_run && index != nullptr)
      ZF_TRY(output::WriteSmallFile(env, report.index, tail.index_text));
    rollback.Keep();
    return report;
  }
  // The copies before the index: a folder with an index is complete.
  ZF_TRY(output::WriteTail(env, output, tail, tail_in_place, options.buffer_bytes, &rollback, &report.copied,
                           nullptr));
  rollback.Keep();
  return report;
}

model::FolderTotal TotalOfFolder(Env* env, const std::string& folder, const std::vector<std::string>& files,
                                 const std::vector<model::Listing>& listings, bool listed,
                                 const torch::ReadOptions& read) {
  model::FolderTotal total;
  total.path = folder;
  total.files = files.size();
  bool torch_files = false;
  for (const model::Listing& l : listings) {
    total.stored_bytes += l.stored_bytes;
    total.referenced_bytes += l.referenced_bytes;
    torch_files = torch_files || l.format != model::FileFormat::kSafetensors;
  }
  for (const std::string& f : files) {
    Result<std::unique_ptr<RandomSource>> src = env->OpenRandom(f);
    if (src.ok()) total.file_bytes += (*src)->size();
  }
  if (!listed || !torch_files) return total;
  ShrinkOptions plan;
  plan.read = read;
  plan.dry_run = true;
  plan.keep_unsafe = true;
  Result<FolderReport> report = ShrinkFolder(env, folder, folder, plan);
  if (!report.ok()) return total;
  // The plan's files among those listed (it also shrinks a pytorch_model.bin
  // beside an index, which the listing does not count); the listed
  // safetensors files stay as they are.
  uint64_t shrunk = total.file_bytes;
  for (const ShrinkReport& r : report->shards)
    if (std::find(files.begin(), files.end(), r.input) != files.end() && r.input_file_bytes <= shrunk)
      shrunk = shrunk - r.input_file_bytes + r.output_file_bytes;
  total.shrunk_file_bytes = shrunk;
  return total;
}

}  // namespace zerofold::shrink
