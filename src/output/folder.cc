#include "output/folder.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <span>

#include "model/hf_folder.h"

namespace zerofold::output {

namespace {

// "model-00001-of-00003.safetensors": stem, "-", 5+ digits, "-of-", 5+ digits, extension.
bool IsShardName(const std::string& name, ShardFormat format) {
  const std::string single = SingleFileName(format);
  const size_t dot = single.find('.');
  const std::string stem = single.substr(0, dot), ext = single.substr(dot);
  if (name.size() <= stem.size() + ext.size() || name.rfind(stem + "-", 0) != 0 ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return false;
  const std::string middle = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - ext.size());
  const size_t of = middle.find("-of-");
  if (of == std::string::npos) return false;
  auto digits = [](const std::string& s) {
    return s.size() >= 5 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  return digits(middle.substr(0, of)) && digits(middle.substr(of + 4));
}

}  // namespace

bool IsSavedWeightsName(const std::string& name, ShardFormat format) {
  return name == SingleFileName(format) || name == IndexFileName(format) || IsShardName(name, format);
}

Status WriteIndex(Env* env, const std::string& path, uint64_t total_size,
                  std::vector<std::pair<std::string, std::string>> weight_map) {
  std::sort(weight_map.begin(), weight_map.end());  // sort_keys=True; bytewise is code point order in UTF-8
  model::ShardIndex index;
  index.path = path;
  index.total_size = total_size;
  index.weight_map = std::move(weight_map);
  return WriteSmallFile(env, path, model::FormatShardIndex(index));
}

Result<std::vector<std::string>> EarlierSave(Env* env, const std::string& folder, ShardFormat format) {
  std::vector<std::string> paths;
  if (!env->IsDirectory(folder)) return paths;
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(folder));
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries)
    if (!e.is_dir && IsSavedWeightsName(e.name, format)) paths.push_back(model::JoinPath(folder, e.name));
  return paths;
}

Result<std::vector<std::string>> RemoveStaleShards(Env* env, const std::string& folder, ShardFormat format,
                                                   const std::set<std::string>& keep) {
  std::vector<std::string> removed;
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> earlier, EarlierSave(env, folder, format));
  for (const std::string& path : earlier) {
    std::string name = path.substr(path.rfind('/') + 1);
    if (keep.count(name)) continue;
    ZF_TRY(env->RemoveFile(path));
    removed.push_back(name);
  }
  return removed;
}

Status RefuseInputTargets(Env* env, const std::vector<std::string>& inputs, const std::vector<std::string>& targets,
                          const std::string& what) {
  // Each path is looked up once: a folder of many shards has many of both.
  auto id_of = [env](const std::string& path) -> Result<std::optional<FileId>> {
    Result<FileId> id = env->GetFileId(path);
    if (id.ok()) return std::optional<FileId>(*id);
    if (id.status().code() == Code::kNotFound) return std::optional<FileId>();
    return id.status();
  };
  std::vector<std::optional<FileId>> input_ids;
  for (const std::string& in : inputs) {
    ZF_ASSIGN_OR_RETURN(std::optional<FileId> id, id_of(in));
    input_ids.push_back(id);
  }
  for (const std::string& t : targets) {
    ZF_ASSIGN_OR_RETURN(std::optional<FileId> id, id_of(t));
    if (!id) continue;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (input_ids[i] == id) return Status::InvalidArgument(t == inputs[i] ? what : what + ": " + inputs[i]).WithPath(t);
  }
  return Status::OK();
}

Result<std::vector<std::string>> OtherFileNames(Env* env, const std::string& input,
                                                const std::set<std::string>& handled) {
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(input));
  std::vector<std::string> names;
  for (const DirEntry& e : entries)
    if (!e.is_dir && !handled.count(e.name) && e.name.rfind(".", 0) != 0) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

Status CopyFile(Env* env, const std::string& from, const std::string& to, size_t buffer_bytes) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(from));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(to));
  std::vector<std::byte> buffer(std::min<uint64_t>(buffer_bytes, std::max<uint64_t>(src->size(), 1)));
  for (uint64_t pos = 0; pos < src->size();) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src->size() - pos));
    ZF_TRY(ReadExactAt(*src, pos, std::span<std::byte>(buffer.data(), n)));
    ZF_TRY(sink->Append(std::span<const std::byte>(buffer.data(), n)));
    pos += n;
  }
  return sink->Commit();
}

Status WriteSmallFile(Env* env, const std::string& path, const std::string& text) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(path));
  ZF_TRY(sink->Append(std::as_bytes(std::span<const char>(text.data(), text.size()))));
  return sink->Commit();
}

}  // namespace zerofold::output
