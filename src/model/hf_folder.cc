#include "model/hf_folder.h"

#include <algorithm>
#include <map>
#include <string>

#include "json/reader.h"
#include "json/value.h"
#include "json/writer.h"

namespace zerofold::model {

namespace {

constexpr uint64_t kMaxIndexBytes = 256ull << 20;

// Errors of a shard's own bytes (CheckShardIndex leaves the shard to its
// reader), as against a failed read or a stop, which end the check.
bool IsShardsOwnFault(Code code) {
  return code == Code::kCorrupt || code == Code::kUnsupported || code == Code::kUnsafe || code == Code::kLimit;
}

std::string Quoted(const std::string& name) { return "\"" + name + "\""; }

// Why `text`, which the strict reader refused, is refused, when it is a
// name weight_map lists twice: kCorrupt at the second member, naming both
// shards. OK when it is not (the strict reader's error stands).
Status DuplicateEntry(const std::string& text) {
  json::ParseOptions lenient;
  lenient.allow_duplicate_keys = true;
  Result<json::Value> root = json::Parse(text, lenient);
  if (!root.ok() || !root->is_object()) return Status::OK();
  const json::Value* map = root->Find("weight_map");
  if (map == nullptr || !map->is_object()) return Status::OK();
  std::map<std::string, const json::Member*> first;
  for (const json::Member& m : map->members()) {
    auto [at, fresh] = first.emplace(m.key, &m);
    if (fresh) continue;
    auto file = [](const json::Member& e) { return e.value.is_string() ? e.value.string() : std::string("?"); };
    return Status::Corrupt("weight_map lists " + Quoted(m.key) + " twice, in shard " + file(*at->second) +
                           " and in shard " + file(m))
        .WithOffset(m.key_offset);
  }
  return Status::OK();
}

}  // namespace

std::string JoinPath(const std::string& folder, const std::string& name) {
  if (folder.empty()) return name;
  if (folder.back() == '/') return folder + name;
  return folder + "/" + name;
}

std::vector<std::string> ShardIndex::Shards() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : weight_map)
    if (std::find(out.begin(), out.end(), file) == out.end()) out.push_back(file);
  return out;
}

Result<ShardIndex> ReadShardIndex(Env* env, const std::string& path) {
  ZF_ASSIGN_OR_RETURN(std::string text, env->ReadSmallFile(path, kMaxIndexBytes));
  Result<json::Value> parsed = json::Parse(text);
  if (!parsed.ok()) {
    ZF_TRY(DuplicateEntry(text).WithPath(path));
    return Status(parsed.status()).WithPath(path);
  }
  const json::Value& root = *parsed;
  auto bad = [&](const json::Value& at, const std::string& why) {
    return Status::Corrupt(why).WithOffset(at.offset()).WithPath(path);
  };
  if (!root.is_object()) return bad(root, "index is not a JSON object");
  ShardIndex index;
  index.path = path;
  if (const json::Value* meta = root.Find("metadata"); meta != nullptr && !meta->is_null()) {
    if (!meta->is_object()) return bad(*meta, "\"metadata\" is not an object");
    for (const json::Member& m : meta->members()) {
      if (m.key == "total_size") {
        std::optional<uint64_t> v = m.value.AsUint64();
        if (!v) return bad(m.value, "\"total_size\" is not a non-negative integer");
        index.total_size = *v;
      } else {
        json::Writer w;
        w.Write(m.value);
        ZF_ASSIGN_OR_RETURN(std::string text_value, w.Finish());
        index.metadata.emplace_back(m.key, std::move(text_value));
      }
    }
  }
  const json::Value* map = root.Find("weight_map");
  if (map == nullptr) return bad(root, "index has no \"weight_map\"");
  if (!map->is_object()) return bad(*map, "\"weight_map\" is not an object");
  for (const json::Member& m : map->members()) {
    if (!m.value.is_string()) return bad(m.value, "weight_map[\"" + m.key + "\"] is not a file name");
    const std::string& file = m.value.string();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      return bad(m.value, "weight_map[\"" + m.key + "\"] names \"" + file + "\", not a file in the folder");
    index.weight_map.emplace_back(m.key, file);
  }
  return index;
}

std::string FormatShardIndex(const ShardIndex& index) {
  json::Writer w(json::WriteOptions{2});
  w.BeginObject();
  w.Key("metadata");
  w.BeginObject();
  for (const auto& [key, text] : index.metadata) {
    w.Key(key);
    Result<json::Value> v = json::Parse(text);
    if (v.ok()) w.Write(*v);
    else w.Null();
  }
  w.Key("total_size");
  w.Uint(index.total_size);
  w.EndObject();
  w.Key("weight_map");
  w.BeginObject();
  for (const auto& [name, file] : index.weight_map) {
    w.Key(name);
    w.String(file);
  }
  w.EndObject();
  w.EndObject();
  Result<std::string> out = w.Finish();
  return out.ok() ? *out + "\n" : std::string();
}

Status CheckShardIndex(Env* env, const ShardIndex& index, const std::string& folder, const ListOptions& options) {
  // The names each shard holds, of the shards that list.
  std::map<std::string, std::set<std::string>> held;
  for (const std::string& shard : index.Shards()) {
    Result<Listing> listing = ListFile(env, JoinPath(folder, shard), options);
    if (!listing.ok()) {
      if (IsShardsOwnFault(listing.status().code())) continue;  // its reader reports it
      return listing.status();  // a failed read, a stop: the run's, not the shard's
    }
    std::set<std::string>& names = held[shard];
    for (const TensorInfo& t : listing->tensors) names.insert(t.name);
  }
  auto corrupt = [&](const std::string& why) { return Status::Corrupt(why).WithPath(index.path); };
  std::map<std::string, std::string> listed;  // weight_map; one member per name (ReadShardIndex)
  for (const auto& [name, shard] : index.weight_map) {
    listed.emplace(name, shard);
    auto in = held.find(shard);
    if (in != held.end() && !in->second.count(name))
      return corrupt("weight_map names " + Quoted(name) + ", which shard " + shard + " does not hold");
  }
  for (const std::string& shard : index.Shards()) {
    auto in = held.find(shard);
    if (in == held.end()) continue;
    for (const std::string& name : in->second) {
      auto entry = listed.find(name);
      if (entry == listed.end())
        return corrupt("shard " + shard + " holds " + Quoted(name) + ", which weight_map does not list");
      if (entry->second == shard) continue;
      if (held.count(entry->second))  // and holds it: the first loop checked
        return corrupt("shards " + entry->second + " and " + shard + " both hold " + Quoted(name) +
                       "; weight_map names " + entry->second);
      return corrupt("shard " + shard + " holds " + Quoted(name) + ", which weight_map places in shard " +
                     entry->second);
    }
  }
  return Status::OK();
}

Result<ModelFiles> ResolveModelPath(Env* env, const std::string& path, const ListOptions& options) {
  ModelFiles out;
  if (!env->IsDirectory(path)) {
    if (!env->FileExists(path)) return Status::NotFound("no such file or folder").WithPath(path);
    out.files.push_back(path);
    return out;
  }
  out.folder = path;
  for (const char* name : {kTorchIndexName, kSafetensorsIndexName}) {
    std::string index_path = JoinPath(path, name);
    if (!env->FileExists(index_path)) continue;
    ZF_ASSIGN_OR_RETURN(ShardIndex index, ReadShardIndex(env, index_path));
    for (const std::string& shard : index.Shards()) {
      std::string shard_path = JoinPath(path, shard);
      if (!env->FileExists(shard_path))
        return Status::NotFound("index names shard \"" + shard + "\", which is missing").WithPath(index_path);
      out.files.push_back(shard_path);
    }
    ZF_TRY(CheckShardIndex(env, index, path, options));
    out.indexes.push_back(std::move(index));
  }
  if (out.indexes.empty()) {
    for (const char* name : {kTorchSingleName, kSafetensorsSingleName}) {
      std::string file = JoinPath(path, name);
      if (env->FileExists(file)) out.files.push_back(file);
    }
  }
  if (out.files.empty())
    return Status::NotFound(std::string("folder has no ") + kTorchIndexName + ", " + kSafetensorsIndexName + ", " +
                            kTorchSingleName + " or " + kSafetensorsSingleName)
        .WithPath(path);
  return out;
}

Result<std::vector<std::string>> FolderCheckpoints(Env* env, const std::string& folder, std::set<std::string>& handled,
                                                   const ListOptions& options) {
  ZF_ASSIGN_OR_RETURN(ModelFiles files, ResolveModelPath(env, folder, options));
  std::vector<std::string> paths;
  for (const char* index_name : {kTorchIndexName, kSafetensorsIndexName}) {
    for (const ShardIndex& index : files.indexes) {
      if (index.path != JoinPath(folder, index_name)) continue;
      handled.insert(index_name);
      for (const std::string& shard : index.Shards()) {
        paths.push_back(JoinPath(folder, shard));
        handled.insert(shard);
      }
      return paths;
    }
    const char* single = index_name == kTorchIndexName ? kTorchSingleName : kSafetensorsSingleName;
    if (env->FileExists(JoinPath(folder, single))) {
      handled.insert(single);
      paths.push_back(JoinPath(folder, single));
      return paths;
    }
  }
  return Status::NotFound(std::string("this folder holds no ") + kTorchIndexName + ", " +
                          kTorchSingleName + ", " + kSafetensorsIndexName + " or " +
                          kSafetensorsSingleName)
      .WithPath(folder);
}

}  // namespace zerofold::model
