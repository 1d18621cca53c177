#include "zero/load.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "pickle/safety.h"
#include "torch/read.h"
#include "zero/extract.h"
#include "zero/files.h"

namespace zerofold::zero {

namespace {

// DeepSpeed's states files end so (zero/files.h has the full grammar).
constexpr std::string_view kStatesSuffix = "_states.pt";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string JoinPath(const std::string& folder, const std::string& name) {
  if (folder.empty()) return name;
  if (folder.back() == '/') return folder + name;
  return folder + "/" + name;
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A tag must name one folder inside the checkpoint folder.
bool IsFolderName(std::string_view tag) {
  return !tag.empty() && tag != "." && tag != ".." && tag.find('/') == std::string_view::npos &&
         tag.find('\0') == std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  const std::string_view space = " \t\r\n";
  size_t b = s.find_first_not_of(space);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(space);
  return s.substr(b, e - b + 1);
}

bool HasStatesFile(const std::vector<DirEntry>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [](const DirEntry& e) { return !e.is_dir && EndsWith(e.name, kStatesSuffix); });
}

// Subfolders of `dir` that hold states files, sorted, for messages.
std::vector<std::string> TagFolders(Env* env, const std::string& dir, const std::vector<DirEntry>& entries) {
  std::vector<std::string> tags;
  for (const DirEntry& e : entries) {
    if (!e.is_dir) continue;
    Result<std::vector<DirEntry>> sub = env->ListDir(JoinPath(dir, e.name));
    if (sub.ok() && HasStatesFile(*sub)) tags.push_back(e.name);
  }
  std::sort(tags.begin(), tags.end());
  return tags;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// The tag folder `tag` of `dir`; kNotFound listing the tag folders there.
Result<std::string> TagFolderOf(Env* env, const std::string& dir, const std::vector<DirEntry>& entries,
                                const std::string& tag, const std::string& named_by) {
  std::string folder = JoinPath(dir, tag);
  if (env->IsDirectory(folder)) return folder;
  std::vector<std::string> tags = TagFolders(env, dir, entries);
  Status s = Status::NotFound(named_by + " names tag '" + tag + "', which is no folder here" +
                              (tags.empty() ? std::string(" (no tag folders)") : " (tag folders: " + Join(tags) + ")"));
  return s.WithPath(dir);
}

// Keeps where each storage's bytes are; the graph is dropped.
ZeroFile KeepLocations(std::string path, std::unique_ptr<RandomSource> source, const torch::Checkpoint& ckpt) {
  ZeroFile f;
  f.path = std::move(path);
  f.source = std::move(source);
  f.unsafe_globals = ckpt.unsafe_globals;
  for (const torch::Storage& s : ckpt.storages) f.storages.emplace(s.key, s);
  return f;
}

Result<std::pair<torch::Checkpoint, std::unique_ptr<RandomSource>>> Read(Env* env, const std::string& path,
                                                                          const torch::ReadOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(*src, options);
  if (!ckpt.ok()) return Status(ckpt.status()).WithPath(path);
  return std::make_pair(std::move(ckpt).value(), std::move(src));
}

void WarnUnsafe(const ZeroFile& f, LoadedZero* out) {
  if (f.unsafe_globals.empty()) return;
  out->warnings.emplace_back(f.path, "pickle references unsafe globals: " + pickle::DescribeUnsafe(f.unsafe_globals) +
                                         " (not executed; merge writes only tensors, so none is carried)");
}

}  // namespace

Result<std::string> FindTagFolder(Env* env, const std::string& ckpt_dir, const std::optional<std::string>& tag) {
  if (!env->FileExists(ckpt_dir)) return Status::NotFound("no such folder").WithPath(ckpt_dir);
  if (!env->IsDirectory(ckpt_dir))
    return Status::InvalidArgument("is a file; merge takes a DeepSpeed checkpoint folder").WithPath(ckpt_dir);
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(ckpt_dir));
  if (tag) {
    if (!IsFolderName(*tag))
      return Status::InvalidArgument("--tag '" + *tag + "' is not a folder name").WithPath(ckpt_dir);
    return TagFolderOf(env, ckpt_dir, entries, *tag, "--tag");
  }
  auto has_file = [&entries](const char* name) {
    return std::any_of(entries.begin(), entries.end(), [name](const DirEntry& e) { return !e.is_dir && e.name == name; });
  };
  const char* latest_name = has_file(kLatestFile) || !has_file(kLatestUniversalFile) ? kLatestFile : kLatestUniversalFile;
  const std::string latest = JoinPath(ckpt_dir, latest_name);
  bool has_latest = has_file(latest_name);
  if (has_latest) {
    Result<std::string> text = env->ReadSmallFile(latest, kMaxLatestBytes);
    if (!text.ok()) {
      Status s = text.status();
      if (s.code() == Code::kLimit)
        return Status::Corrupt("longer than " + std::to_string(kMaxLatestBytes) + " bytes: not a DeepSpeed tag file")
            .WithPath(latest);
      return s.WithPath(latest);
    }
    std::string_view name = Trim(*text);
    if (!IsFolderName(name))
      return Status::Corrupt("names '" + std::string(name) + "', which is not a single folder name").WithPath(latest);
    return TagFolderOf(env, ckpt_dir, entries, std::string(name), "'" + std::string(latest_name) + "'");
  }
  if (HasStatesFile(entries)) return ckpt_dir;  // a tag folder itself
  std::vector<std::string> tags = TagFolders(env, ckpt_dir, entries);
  if (!tags.empty())
    return Status::NotFound("no 'latest' file to name the tag; tag folders here: " + Join(tags) + " (use --tag)")
        .WithPath(ckpt_dir);
  return Status::NotFound(
             "not a DeepSpeed checkpoint folder: no 'latest' file, no *_model_states.pt file, no tag folder")
      .WithPath(ckpt_dir);
}

Result<LoadedZero> LoadZeroCheckpoint(Env* env, const std::string& tag_folder, const torch::ReadOptions& read) {
  LoadedZero out;
  out.tag_folder = tag_folder;
  out.tag = BaseName(tag_folder);
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(tag_folder));
  std::vector<std::string> names;
  for (const DirEntry& e : entries)
    if (!e.is_dir) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  Result<zero::TagFiles> classified = zero::ClassifyTagFiles(names);
  if (!classified.ok()) {
    Status s = classified.status();
    // ClassifyTagFiles names a file (its base name) or nothing: give the
    // user a path they can open.
    if (s.path().empty()) return s.WithPath(tag_folder);
    Status full = Status::Of(s.code(), s.message());
    return full.WithPath(JoinPath(tag_folder, s.path()));
  }
  const zero::TagFiles& files = *classified;

  std::vector<std::string> model_names = files.rank_model_states;
  if (model_names.empty()) {
    model_names.push_back(files.model_states);
  } else if (!files.model_states.empty()) {
    out.warnings.emplace_back(JoinPath(tag_folder, files.model_states),
                              "ignored: the per-rank zero_pp_rank_R model-states files (ZeRO-3) are used");
  }
  for (const std::string& name : model_names) {
    std::string path = JoinPath(tag_folder, name);
    ZF_ASSIGN_OR_RETURN(auto read_file, Read(env, path, read));
    ZF_ASSIGN_OR_RETURN(zero::ModelStates m, zero::ExtractModelStates(read_file.first, path));
    out.description.model_states.push_back(std::move(m));
    out.model_files.push_back(KeepLocations(path, std::move(read_file.second), read_file.first));
    WarnUnsafe(out.model_files.back(), &out);
  }
  for (uint32_t rank = 0; rank < files.optim_states.size(); ++rank) {
    std::string path = JoinPath(tag_folder, files.optim_states[rank]);
    ZF_ASSIGN_OR_RETURN(auto read_file, Read(env, path, read));
    ZF_ASSIGN_OR_RETURN(zero::OptimStates o, zero::ExtractOptimStates(read_file.first, path, rank));
    out.description.optim_states.push_back(std::move(o));
    out.optim_files.push_back(KeepLocations(path, std::move(read_file.second), read_file.first));
    WarnUnsafe(out.optim_files.back(), &out);
  }
  if (IsUniversalTagFolder(env, tag_folder)) ZF_TRY(LoadUniversalParams(env, read, &out));
  ZF_TRY(LoadOffloadedPartitions(env, &out));
  return out;
}

}  // namespace zerofold::zero
