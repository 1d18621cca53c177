#include "megatron/folder.h"

#include <string_view>
#include <utility>

#include "json/reader.h"
#include "model/hf_folder.h"

namespace zerofold::megatron {

namespace {

// metadata.json and the tracker are a few dozen bytes.
constexpr uint64_t kMaxSmallFile = 1 << 16;
constexpr size_t kIterationDigits = 7;  // get_checkpoint_name: iter_{:07d}

bool IsFile(Env* env, const std::string& path) { return env->FileExists(path) && !env->IsDirectory(path); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool IsNumber(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// iter_%07d of a decimal iteration.
std::string IterationFolder(std::string_view digits) {
  std::string n(digits);
  while (n.size() > 1 && n[0] == '0') n.erase(0, 1);
  if (n.size() < kIterationDigits) n.insert(0, kIterationDigits - n.size(), '0');
  return "iter_" + n;
}

// Reads dir/metadata.json into `f`: false when there is none, or it is no
// JSON object with a sharded_backend string (another tool's file); a
// backend other than torch_dist is kUnsupported.
Result<bool> ReadConfig(Env* env, const std::string& dir, Folder* f) {
  const std::string path = model::JoinPath(dir, kConfigFile);
  if (!IsFile(env, path)) return false;
  Result<std::string> text = env->ReadSmallFile(path, kMaxSmallFile);
  if (!text.ok()) return Status(text.status()).WithPath(path);
  Result<json::Value> doc = json::Parse(*text);
  if (!doc.ok()) return false;
  const json::Value* backend = doc->Find("sharded_backend");
  if (backend == nullptr || !backend->is_string()) return false;
  f->sharded_backend = backend->string();
  if (f->sharded_backend != kTorchDistBackend)
    return Status::Unsupported("sharded_backend '" + f->sharded_backend + "' (only " + kTorchDistBackend +
                               " checkpoints are read)")
        .WithPath(path);
  if (const json::Value* v = doc->Find("sharded_backend_version")) f->sharded_backend_version = v->AsInt64().value_or(0);
  if (const json::Value* v = doc->Find("common_backend"); v && v->is_string()) f->common_backend = v->string();
  if (const json::Value* v = doc->Find("common_backend_version")) f->common_backend_version = v->AsInt64().value_or(0);
  f->torch_dist = dir;
  return true;
}

Result<std::optional<Folder>> FindMegatronLm(Env* env, const std::string& dir, const std::optional<std::string>& tag) {
  Folder f;
  f.checkpoint = dir;
  f.layout = Layout::kMegatronLm;
  const std::string tracker = model::JoinPath(dir, kTrackerFile);
  Result<std::string> text = env->ReadSmallFile(tracker, kMaxSmallFile);
  if (!text.ok()) return Status(text.status()).WithPath(tracker);
  f.tracker = std::string(Trim(*text));
  std::string_view choice = tag ? std::string_view(*tag) : std::string_view(f.tracker);
  if (choice == kReleaseTag) {
    f.iteration_folder = kReleaseTag;
  } else if (IsNumber(choice)) {
    f.iteration_folder = IterationFolder(choice);
  } else if (tag && !choice.empty() && choice.find('/') == std::string_view::npos && choice != "." && choice != "..") {
    f.iteration_folder = std::string(choice);
  } else if (tag) {
    return Status::InvalidArgument("--tag '" + *tag + "' is no iteration number, `release` or folder name in " + dir);
  } else {
    return Status::Corrupt("holds '" + f.tracker.substr(0, 40) + "', not an iteration number or `release`")
        .WithPath(tracker);
  }
  const std::string iteration = model::JoinPath(dir, f.iteration_folder);
  if (!env->IsDirectory(iteration))
    return Status::NotFound("no folder " + f.iteration_folder + (tag ? " (--tag)" : " (named by " + std::string(kTrackerFile) + ")"))
        .WithPath(iteration);
  ZF_ASSIGN_OR_RETURN(bool found, ReadConfig(env, iteration, &f));
  if (!found)
    return Status::Unsupported(std::string("no ") + kConfigFile +
                               ": not a torch_dist checkpoint (Megatron-LM's legacy mp_rank_XX/ files are not read)")
        .WithPath(iteration);
  return std::optional<Folder>(std::move(f));
}

}  // namespace

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kBare: return "bare";
    case Layout::kMegatronLm: return "megatron-lm";
    case Layout::kNemo: return "nemo";
  }
  return "?";
}

Result<std::optional<Folder>> FindFolder(Env* env, const std::string& dir, const std::optional<std::string>& tag) {
  if (!env->IsDirectory(dir)) return std::optional<Folder>();
  if (IsFile(env, model::JoinPath(dir, kTrackerFile))) return FindMegatronLm(env, dir, tag);
  for (Layout layout : {Layout::kBare, Layout::kNemo}) {
    Folder f;
    f.checkpoint = dir;
    f.layout = layout;
    const std::string d = layout == Layout::kBare ? dir : model::JoinPath(dir, kNemoWeights);
    if (!env->IsDirectory(d)) continue;
    ZF_ASSIGN_OR_RETURN(bool found, ReadConfig(env, d, &f));
    if (!found) continue;
    if (tag)
      return Status::InvalidArgument("--tag picks an iteration of a Megatron-LM checkpoint folder (" +
                                     std::string(kTrackerFile) + "); this is a " + LayoutName(layout) +
                                     " torch_dist checkpoint")
          .WithPath(dir);
    return std::optional<Folder>(std::move(f));
  }
  return std::optional<Folder>();
}

}  // namespace zerofold::megatron
