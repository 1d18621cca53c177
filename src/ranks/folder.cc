#include "ranks/folder.h"

#include <map>
#include <string_view>

#include "json/reader.h"
#include "model/hf_folder.h"

namespace zerofold::ranks {

namespace {

constexpr uint64_t kMaxConfigBytes = 1 << 16;

// Parses "<kind>_world_size_<W>_rank_<r>.pt"; false for other names.
bool ParseRankName(std::string_view name, std::string_view kind, int64_t* world, int64_t* rank) {
  const std::string head = std::string(kind) + "_world_size_";
  if (name.substr(0, head.size()) != head || name.size() < 3 || name.substr(name.size() - 3) != ".pt") return false;
  std::string_view rest = name.substr(head.size(), name.size() - head.size() - 3);
  const size_t mid = rest.find("_rank_");
  if (mid == std::string_view::npos) return false;
  auto number = [](std::string_view s, int64_t* out) {
    if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return false;
    int64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  return number(rest.substr(0, mid), world) && number(rest.substr(mid + 6), rank);
}

// The files of one kind by rank; kCorrupt for two worlds, a rank outside
// its world, or a missing rank.
Result<std::vector<std::string>> FilesOf(const std::string& dir, const std::vector<DirEntry>& entries,
                                         std::string_view kind, int64_t* world) {
  std::map<int64_t, std::string> by_rank;
  for (const DirEntry& e : entries) {
    int64_t w = 0, r = 0;
    if (e.is_dir || !ParseRankName(e.name, kind, &w, &r)) continue;
    if (*world == 0) *world = w;
    if (w != *world)
      return Status::Corrupt("rank files of world sizes " + std::to_string(*world) + " and " + std::to_string(w) +
                             " (" + e.name + "): one checkpoint's files share one world size")
          .WithPath(dir);
    if (w < 1 || r >= w) return Status::Corrupt("rank " + std::to_string(r) + " of a world of " + std::to_string(w)).WithPath(model::JoinPath(dir, e.name));
    by_rank.emplace(r, model::JoinPath(dir, e.name));
  }
  std::vector<std::string> out;
  if (by_rank.empty()) return out;
  for (int64_t r = 0; r < *world; ++r) {
    auto it = by_rank.find(r);
    if (it == by_rank.end())
      return Status::Corrupt("no " + RankFileName(std::string(kind).c_str(), *world, r) + ": every rank's file holds its shard")
          .WithPath(dir);
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

std::string RankFileName(const char* kind, int64_t world, int64_t rank) {
  return std::string(kind) + "_world_size_" + std::to_string(world) + "_rank_" + std::to_string(rank) + ".pt";
}

Result<std::optional<RankFolder>> FindRankFolder(Env* env, const std::string& dir) {
  if (!env->IsDirectory(dir)) return std::optional<RankFolder>();
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(dir));
  RankFolder f;
  f.path = dir;
  ZF_ASSIGN_OR_RETURN(f.model_files, FilesOf(dir, entries, "model", &f.world));
  if (f.model_files.empty()) {
    // verl's global_step_N/ holds actor/ (and critic/), each a rank folder.
    std::string roles;
    for (const DirEntry& e : entries) {
      if (!e.is_dir || (e.name != "actor" && e.name != "critic")) continue;
      int64_t w = 0;
      Result<std::vector<DirEntry>> sub = env->ListDir(model::JoinPath(dir, e.name));
      if (sub.ok() && FilesOf(dir, *sub, "model", &w).ok() && w > 0) roles += (roles.empty() ? "" : ", ") + e.name + "/";
    }
    if (!roles.empty())
      return Status::NotFound("no model_world_size_*_rank_*.pt here, but " + roles +
                              " hold them (verl's global_step_N/): merge one of those")
          .WithPath(dir);
    return std::optional<RankFolder>();
  }
  int64_t optim_world = f.world;
  ZF_ASSIGN_OR_RETURN(f.optim_files, FilesOf(dir, entries, "optim", &optim_world));
  const std::string config = model::JoinPath(dir, kFsdpConfigFile);
  if (env->FileExists(config)) {
    Result<std::string> text = env->ReadSmallFile(config, kMaxConfigBytes);
    if (!text.ok()) return Status(text.status()).WithPath(config);
    Result<json::Value> doc = json::Parse(*text);
    if (!doc.ok()) return Status::Corrupt("not JSON: " + doc.status().message()).WithPath(config);
    f.has_config = true;
    if (const json::Value* w = doc->Find("world_size")) {
      if (w->AsInt64().value_or(-1) != f.world)
        return Status::Corrupt("world_size " + std::string(w->AsInt64() ? std::to_string(*w->AsInt64()) : "?") +
                               ", the rank files' is " + std::to_string(f.world))
            .WithPath(config);
    }
    if (const json::Value* s = doc->Find("fsdp_strategy"); s && s->is_string()) f.strategy = s->string();
    else if (const json::Value* v = doc->Find("FSDP_version"); v && v->AsInt64())
      f.strategy = "FSDP_version " + std::to_string(*v->AsInt64());
  }
  const std::string hf = model::JoinPath(dir, kHfFolder);
  if (env->IsDirectory(hf)) f.hf_folder = hf;
  return std::optional<RankFolder>(std::move(f));
}

}  // namespace zerofold::ranks
