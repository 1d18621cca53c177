#include "inspect/inspect.h"

#include <algorithm>
#include <set>
#include <utility>

#include "model/hf_folder.h"
#include "rewrite/dequantize.h"
#include "rewrite/shrink.h"

namespace zerofold::inspect {

namespace {

// Kinds 1 to 3 (inspect.h): true when one claimed `path` (described in
// `out`, or its error), false when none did.
template <typename T>
bool Claimed(Result<std::optional<T>> found, Kind kind, std::optional<T>* member, PathReport* out) {
  if (found.ok() && !*found) return false;
  out->kind = kind;
  if (!found.ok()) out->error = std::move(found).status();
  else *member = std::move(**found);
  return true;
}

// The entries of the Hugging Face folder `path` that are neither its
// checkpoint files nor its index files, in name order (FolderTotal::unread).
std::vector<std::string> UnreadEntries(Env* env, const std::string& path, const model::ModelFiles& files) {
  std::vector<std::string> out;
  Result<std::vector<DirEntry>> entries = env->ListDir(path);
  if (!entries.ok()) return out;
  std::set<std::string> read(files.files.begin(), files.files.end());
  for (const model::ShardIndex& index : files.indexes) read.insert(index.path);
  for (const DirEntry& e : *entries) {
    const std::string full = model::JoinPath(path, e.name);
    if (!read.count(full)) out.push_back(full + (e.is_dir ? "/" : ""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// --dequantize's plan of safetensors files, when they look quantized.
std::optional<Quantized> QuantizedOf(Env* env, const std::string& path, const model::ModelFiles& files) {
  for (const std::string& f : files.files)
    if (!f.ends_with(".safetensors")) return std::nullopt;
  std::optional<json::Value> config;
  if (!files.folder.empty()) {
    Result<std::optional<json::Value>> c = rewrite::FolderQuantizationConfig(env, path);
    if (c.ok()) config = std::move(*c);
  }
  std::vector<quant::SourceTensor> tensors;
  Result<quant::Plan> plan = rewrite::PlanFiles(env, files.files, config ? &*config : nullptr, &tensors);
  Quantized q;
  if (!plan.ok()) {
    if (!config && !quant::LooksQuantized(tensors)) return std::nullopt;
    q.refusal = plan.status();
    return q;
  }
  if (!config && plan->groups.empty()) return std::nullopt;
  q.method = plan->method;
  for (quant::Scheme s : plan->schemes) q.schemes.push_back(quant::SchemeName(s));
  for (const quant::Group& g : plan->groups) {
    Quantized::Group out{g.name, quant::SchemeName(g.scheme), g.shape, {}};
    for (uint32_t m : g.members) out.inputs.push_back(tensors[m].name);
    q.groups.push_back(std::move(out));
  }
  q.kept = plan->items.size() - plan->groups.size();
  return q;
}

// Kind 4: a file, or a Hugging Face folder's files and total.
void InspectModelPath(Env* env, const std::string& path, const model::ListOptions& options, PathReport* out) {
  Result<model::ModelFiles> files = model::ResolveModelPath(env, path, options);
  if (!files.ok()) {
    out->error = std::move(files).status();
    return;
  }
  out->kind = files->folder.empty() ? Kind::kFile : Kind::kHfFolder;
  std::vector<model::Listing> listings;
  bool listed = true;
  for (const std::string& file : files->files) {
    Result<model::Listing> listing = model::ListFile(env, file, options);
    if (listing.ok()) listings.push_back(*listing);
    else listed = false;
    out->files.push_back({file, std::move(listing)});
  }
  if (listed) out->quantized = QuantizedOf(env, path, *files);
  if (out->kind != Kind::kHfFolder) return;
  out->folder = rewrite::TotalOfFolder(env, path, files->files, listings, listed, options.torch);
  out->folder->unread = UnreadEntries(env, path, *files);
}

}  // namespace

void Report::ForEachError(const std::function<void(const Status&)>& fn) const {
  for (const PathReport& p : paths) {
    if (!p.error.ok()) fn(p.error);
    for (const FileReport& f : p.files)
      if (!f.listing.ok()) fn(f.listing.status());
  }
}

Status Report::FirstError() const {
  Status first;
  ForEachError([&first](const Status& s) {
    if (first.ok()) first = s;
  });
  return first;
}

PathReport InspectPath(Env* env, const std::string& path, const model::ListOptions& options) {
  PathReport out;
  out.path = path;
  if (Claimed(megatron::InspectPath(env, path, options.torch), Kind::kMegatron, &out.megatron, &out)) return out;
  if (Claimed(ranks::InspectPath(env, path, options.torch), Kind::kRanks, &out.ranks, &out)) return out;
  if (Claimed(dcp::ListDcpPath(env, path, options.torch), Kind::kDcp, &out.dcp, &out)) return out;
  if (zero::IsDeepSpeedFolder(env, path)) {
    Result<zero::ZeroInspection> z = zero::InspectZeroCheckpoint(env, path, options.torch);
    out.kind = Kind::kDeepSpeed;
    if (!z.ok()) out.error = std::move(z).status();
    else out.deepspeed = std::move(z).value();
    return out;
  }
  InspectModelPath(env, path, options, &out);
  return out;
}

Report Inspect(Env* env, const std::vector<std::string>& paths, const model::ListOptions& options,
               const std::function<void(const PathReport&)>& on_path) {
  Report report;
  for (const std::string& path : paths) {
    report.paths.push_back(InspectPath(env, path, options));
    if (on_path) on_path(report.paths.back());
  }
  return report;
}

}  // namespace zerofold::inspect
