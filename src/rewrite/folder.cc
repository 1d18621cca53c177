#include "rewrite/shrink.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "model/hf_folder.h"
#include "output/file_set.h"
#include "output/folder.h"
#include "output/parts.h"
#include "verify/verify.h"

namespace zerofold::rewrite {

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
  ZF_ASSIGN_OR_RETURN(model::ModelFiles files, model::ResolveModelPath(env, input, model::ListOptions{options.read}));
  if (files.folder.empty()) return Status::InvalidArgument("not a folder").WithPath(input);
  // The folder's torch checkpoints: its torch index's shards, or its
  // pytorch_model.bin; without either, its safetensors (convert: each
  // shard becomes the torch shard of the same number).
  // The same choice as FolderCheckpoints (model/hf_folder.h).
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
  // checks of the folder OUT and for --part, which divides the output
  // shards by their planned bytes (output/file_set.h).
  ShrinkOptions shard_options = options;
  shard_options.only_none_ok = true;  // a shard may hold none of --only's names; the folder must not
  shard_options.read_plan = nullptr;  // each shard's reads go with its file
  output::FileSet set;
  set.out = output;
  set.folder = true;
  set.in_place = in_place;
  set.format = output::ShardFormat::kTorch;
  set.inputs = shards;
  std::vector<std::shared_ptr<ShrinkReport>> planned;
  for (const std::string& shard : shards) {
    ZF_ASSIGN_OR_RETURN(PlannedShrink p, PlanShrinkFile(env, shard, target_of(shard), shard_options));
    set.files.push_back(std::move(p.file));
    planned.push_back(std::move(p.report));
  }
  if (!options.only.empty() &&
      std::all_of(planned.begin(), planned.end(), [](const auto& r) { return r->tensors == 0; }))
    return Status::InvalidArgument("--only matches no tensor of the folder's shards").WithPath(input);
  // The index: its weight_map, and total_size = the nbytes of every name in
  // it (tied names counted per name), from the planned shards.
  if (index != nullptr) {
    set.inputs.push_back(index->path);
    std::map<std::string, uint64_t> name_bytes;  // tensor name -> nbytes, over all shards
    for (size_t k = 0; k < shards.size(); ++k)
      if (shards[k] != single_beside_index)
        for (const auto& [name, nbytes] : planned[k]->tensor_nbytes) name_bytes[name] = nbytes;
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
    set.tail.index = out_index.path;
    set.tail.index_text = model::FormatShardIndex(out_index);
  }
  if (!in_place) {
    // IN's other files (config, tokenizer; not hidden ones), copied as they
    // are after the shards, in name order.
    std::set<std::string> handled;
    for (const std::string& shard : shards) handled.insert(shard.substr(shard.rfind('/') + 1));
    if (index != nullptr) handled.insert(index->path.substr(index->path.rfind('/') + 1));
    set.tail.copy_from = input;
    ZF_ASSIGN_OR_RETURN(set.tail.copies, output::OtherFileNames(env, input, handled));
  }
  output::FileSetOptions writing = output::FileSetOptionsOf(options);
  writing.part = part;
  writing.force = force;
  writing.progress = options.progress;
  writing.file_done = [&](size_t k, bool skipped) {
    report.shards.push_back(*planned[k]);
    if (options.file_done) options.file_done(report.shards.back(), skipped);
  };
  ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
  if (part.kind != output::PartSpec::Kind::kAll) report.parts = std::move(written.parts);
  if (part.kind == output::PartSpec::Kind::kPart) report.index.clear();  // the index and the rest are finish's
  report.copied = std::move(written.copied);
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

}  // namespace zerofold::rewrite
