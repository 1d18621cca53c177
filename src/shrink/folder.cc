#include "shrink/shrink.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "model/hf_folder.h"
#include "output/committed_files.h"
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
  std::vector<std::string> targets;  // per shard, the file it is written to
  for (const std::string& shard : shards) targets.push_back(target_of(shard));
  if (!in_place) {
    // OUT's files must not be IN's by another name: each would be replaced
    // before (or after) it is read.
    std::vector<std::string> inputs = shards, replaced = targets;
    if (index != nullptr) {
      inputs.push_back(index->path);
      replaced.push_back(target_of(index->path));
    }
    ZF_TRY(output::RefuseInputTargets(env, inputs, replaced, "would replace an input file"));
  }
  FolderReport report;
  // With --part (output/parts.h): every shard is planned first (metadata
  // only), so every part divides the same output files by their planned
  // bytes; a part shrinks only its own, skipping those already complete;
  // finish checks they all are, then writes the index and copies the rest.
  std::vector<ShrinkReport> planned;
  if (part.kind != output::PartSpec::Kind::kAll) {
    ShrinkOptions plan_only = options;
    plan_only.dry_run = true;
    for (size_t k = 0; k < shards.size(); ++k) {
      ZF_ASSIGN_OR_RETURN(ShrinkReport r, ShrinkFile(env, shards[k], targets[k], plan_only));
      report.parts.paths.push_back(targets[k]);
      report.parts.bytes.push_back(r.output_file_bytes);
      planned.push_back(std::move(r));
    }
    ZF_TRY(output::SelectPartFiles(env, part, force, options.dry_run, report.parts));
  }
  // IN's other files (config, tokenizer; not hidden ones), copied as they
  // are after the shards, in name order.
  std::vector<std::string> copies;
  if (!in_place) {
    std::set<std::string> handled;
    for (const std::string& shard : shards) handled.insert(shard.substr(shard.rfind('/') + 1));
    if (index != nullptr) handled.insert(index->path.substr(index->path.rfind('/') + 1));
    ZF_ASSIGN_OR_RETURN(copies, output::OtherFileNames(env, input, handled));
  }
  // One run into a folder: an existing output file needs --force, as a
  // file OUT does (parts: SelectPartFiles decides).
  if (part.kind == output::PartSpec::Kind::kAll && !in_place && !options.dry_run && !force) {
    std::vector<std::string> written = targets;
    if (index != nullptr) written.push_back(model::JoinPath(output, model::kTorchIndexName));
    for (const std::string& name : copies) written.push_back(model::JoinPath(output, name));
    for (const std::string& t : written) {
      if (env->FileExists(t))
        return Status::InvalidArgument("exists; use --force to replace it").WithPath(t);
    }
  }
  // finish writes no shard: OUT holds the parts' shards already.
  if (!options.dry_run && !in_place && part.kind != output::PartSpec::Kind::kFinish) ZF_TRY(env->CreateDirs(output));
  // A failing or cancelled run removes what it wrote before the failure (in
  // place, each shard replaced its input: atomic per file, nothing to take
  // back; a part keeps its complete files for its rerun).
  output::CommittedFiles committed(env, !in_place && part.kind != output::PartSpec::Kind::kPart);
  std::map<std::string, uint64_t> name_bytes;  // tensor name -> nbytes, over all shards
  for (size_t k = 0; k < shards.size(); ++k) {
    if (part.kind != output::PartSpec::Kind::kAll) {
      if (part.kind == output::PartSpec::Kind::kPart && report.parts.file_parts[k] != part.index) continue;
      if (!report.parts.write[k]) {
        // Complete (a part's own; finish: every shard): with verify,
        // checked as a written shard is.
        if (options.verify && !options.dry_run) {
          ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> in, env->OpenRandom(shards[k]));
          ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> out, env->OpenRandom(targets[k]));
          ZF_ASSIGN_OR_RETURN(verify::VerifyReport v, verify::VerifyWritten(*in, *out, {options.read, options.buffer_bytes, options.select}));
          planned[k].verified = true;
          planned[k].verified_tensors = v.tensors;
          planned[k].verified_bytes = v.bytes;
        }
        report.shards.push_back(planned[k]);
        if (options.file_done) options.file_done(report.shards.back(), true);
        continue;
      }
    }
    Result<ShrinkReport> r = ShrinkFile(env, shards[k], targets[k], options);
    if (!r.ok()) return r.status();
    if (!options.dry_run) committed.Add(targets[k]);
    report.shards.push_back(std::move(r).value());
    if (options.file_done) options.file_done(report.shards.back(), false);
  }
  if (part.kind == output::PartSpec::Kind::kPart) return report;  // the index and the rest are finish's
  std::string index_text;
  if (index != nullptr) {
    // total_size: the nbytes of every name in weight_map, from the shards.
    model::ShardIndex out_index = *index;
    out_index.path = model::JoinPath(output, model::kTorchIndexName);
    for (auto& [name, file] : out_index.weight_map) file = TorchName(file);
    for (size_t k = 0; k < shards.size(); ++k)
      if (shards[k] != single_beside_index)
        for (const auto& [name, nbytes] : report.shards[k].tensor_nbytes) name_bytes[name] = nbytes;
    uint64_t total = 0;
    for (const auto& [name, file] : out_index.weight_map) {
      auto it = name_bytes.find(name);
      if (it == name_bytes.end())
        return Status::Corrupt("weight_map names \"" + name + "\", which shard " + file + " does not hold")
            .WithPath(index->path);
      total += it->second;
    }
    out_index.total_size = total;
    report.total_size = total;
    report.index = out_index.path;
    index_text = model::FormatShardIndex(out_index);
  }
  if (options.dry_run) return report;
  // The copies before the index: a folder with an index is complete.
  for (const std::string& name : copies) {
    const std::string to = model::JoinPath(output, name);
    ZF_TRY(output::CopyFile(env, model::JoinPath(input, name), to, options.buffer_bytes));
    committed.Add(to);
    report.copied.push_back(name);
  }
  if (index != nullptr) {
    ZF_TRY(output::WriteSmallFile(env, report.index, index_text));
  }
  committed.Keep();
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
