#include "hfexport/base.h"

#include <map>
#include <set>
#include <utility>

#include "json/reader.h"
#include "model/hf_folder.h"
#include "torch/checkpoint.h"

namespace zerofold::hfexport {

namespace {

constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

}  // namespace

Result<BaseModel> ReadBase(Env* env, const std::string& folder, const model::ListOptions& options) {
  BaseModel b;
  b.folder = folder;
  b.config_path = model::JoinPath(folder, "config.json");
  if (!env->IsDirectory(folder)) return Status::NotFound("--hf BASE is no folder").WithPath(folder);
  if (!env->FileExists(b.config_path))
    return Status::NotFound("no config.json: --hf BASE is the Hugging Face folder training started from").WithPath(folder);
  ZF_ASSIGN_OR_RETURN(std::string text, env->ReadSmallFile(b.config_path, kMaxConfigBytes));
  Result<json::Value> config = json::Parse(text);
  if (!config.ok()) return Status(config.status()).WithPath(b.config_path);
  b.config = std::move(config).value();
  const json::Value* type = b.config.Find("model_type");
  if (!b.config.is_object() || !type || !type->is_string())
    return Status::Corrupt("config.json has no string model_type").WithPath(b.config_path);
  b.model_type = type->string();
  if (const json::Value* a = b.config.Find("architectures"); a && a->is_array())
    for (const json::Value& s : a->array())
      if (s.is_string()) b.architectures.push_back(s.string());
  std::set<std::string> handled;
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> files, model::FolderCheckpoints(env, folder, handled, options));
  for (const std::string& f : files) {
    ZF_ASSIGN_OR_RETURN(model::Listing listing, model::ListFile(env, f, options));
    for (const model::TensorInfo& t : listing.tensors) {
      std::optional<torch::DType> dtype = torch::FromName(t.dtype);
      if (!dtype) return Status::Unsupported("dtype " + t.dtype + " has no torch name").WithRecord(t.name).WithPath(f);
      b.tensors.push_back(BaseTensor{t.name, *dtype, t.shape});
    }
  }
  return b;
}

std::string FewNames(const std::vector<std::string>& names, size_t few) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < few; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > few) out += " and " + std::to_string(names.size() - few) + " more";
  return out;
}

Status CheckAgainstBase(const BaseModel& base, const gather::GatherPlan& plan) {
  std::map<std::string, const gather::GatherTensor*> exported;
  for (const gather::GatherTensor& t : plan.tensors) exported.emplace(t.name, &t);
  for (const gather::Tie& tie : plan.ties)
    if (auto owner = exported.find(tie.owner); owner != exported.end()) exported.emplace(tie.name, owner->second);
  std::vector<std::string> missing, extra, shapes;
  std::set<std::string> in_base;
  for (const BaseTensor& b : base.tensors) {
    in_base.insert(b.name);
    auto e = exported.find(b.name);
    if (e == exported.end()) {
      missing.push_back(b.name);
    } else if (e->second->shape != b.shape) {
      shapes.push_back(b.name + " " + torch::ShapeText(e->second->shape) + " (BASE " + torch::ShapeText(b.shape) + ")");
    }
  }
  for (const auto& [name, tensor] : exported)
    if (!in_base.count(name)) extra.push_back(name);
  if (missing.empty() && extra.empty() && shapes.empty()) return Status::OK();
  std::string message = "the export does not match BASE's weights";
  if (!missing.empty()) message += "; " + std::to_string(missing.size()) + " missing from the export: " + FewNames(missing);
  if (!extra.empty()) message += "; " + std::to_string(extra.size()) + " not in BASE: " + FewNames(extra);
  if (!shapes.empty()) message += "; " + std::to_string(shapes.size()) + " of another shape: " + FewNames(shapes);
  return Status::Corrupt(message).WithPath(base.folder);
}

}  // namespace zerofold::hfexport
