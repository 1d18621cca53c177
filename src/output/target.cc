#include "output/target.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "io/zstd_stream.h"

namespace zerofold::output {

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "model.st": a stem, then an extension of letters and digits with at least
// one letter. "llama-3.1-8b" and "qwen2.5" have none.
bool HasExtension(std::string_view name) {
  const std::string_view base = BaseName(name);
  const size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == base.size()) return false;
  const std::string_view ext = base.substr(dot + 1);
  return std::all_of(ext.begin(), ext.end(), [](unsigned char c) { return std::isalnum(c) != 0; }) &&
         std::any_of(ext.begin(), ext.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
}

std::string FormatName(ShardFormat format) { return format == ShardFormat::kSafetensors ? "safetensors" : "torch"; }

// The folder holding `path` ("." for a bare name).
std::string ParentOf(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

}  // namespace

std::optional<ShardFormat> FormatByName(std::string name) {
  if (io::IsZstdName(name)) name.resize(name.size() - io::kZstdSuffix.size());
  if (EndsWith(name, ".safetensors")) return ShardFormat::kSafetensors;
  for (std::string_view ext : {".bin", ".pt", ".pth", ".ckpt"})
    if (EndsWith(name, ext)) return ShardFormat::kTorch;
  return std::nullopt;
}

Result<Target> ResolveTarget(Env* env, const std::string& out, const TargetRequest& r) {
  auto refuse = [&](const std::string& why) { return Status::InvalidArgument(why).WithPath(out); };
  Target t;
  std::optional<ShardFormat> named;
  if (out == io::kStdioName) {
    t.kind = TargetKind::kStdout;
  } else if ((!out.empty() && out.back() == '/') || env->IsDirectory(out)) {
    t.kind = TargetKind::kFolder;
  } else {
    // ".bin": an extension with no name before it.
    const std::string base(BaseName(out));
    if (!base.empty() && base[0] == '.' && FormatByName("x" + base))
      return refuse("names no file: give a name before the extension");
    named = FormatByName(out);
    t.zstd = io::IsZstdName(out);
    if (!named && r.input_is_folder) {
      if (HasExtension(out))
        return refuse("names no format (.safetensors, .bin, .pt, .pth, .ckpt, each with .zst) and IN is a folder: "
                      "end OUT with '/' for a folder, or give a file name of a format");
      t.kind = TargetKind::kFolder;
    }
  }
  if (r.to && named && *r.to != *named)
    return refuse(std::string(r.to_word) + " " + FormatName(*r.to) + " contradicts the " + FormatName(*named) +
                  " file name");
  std::optional<ShardFormat> format = r.to ? r.to : named ? named : r.default_format;
  if (!format)
    return Status::InvalidArgument("cannot tell the output format from '" + out + "': " + r.choose_format);
  t.format = *format;
  const bool stream = t.kind == TargetKind::kStdout || t.zstd;
  if (stream && !r.streams)
    return refuse("is a stream ('-' or .zst), which this command does not write; name a file or a folder (and "
                  "compress it afterwards)");
  if (r.shards && t.kind != TargetKind::kFolder)
    return refuse(std::string(r.shards_word) + " writes shards into a folder; make OUT a folder (end it with '/')");
  if (r.part && t.kind != TargetKind::kFolder)
    return refuse(std::string(r.part_word) +
                  " divides the files of a folder OUT; this OUT is one file, written by one run (end OUT with '/' "
                  "for a folder)");
  return t;
}

Status CheckTargets(Env* env, const std::vector<std::string>& inputs, const TargetFiles& files, bool force) {
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
  std::vector<bool> exists;
  for (const std::vector<std::string>* list : {&files.written, &files.removed}) {
    for (const std::string& t : *list) {
      ZF_ASSIGN_OR_RETURN(std::optional<FileId> id, id_of(t));
      exists.push_back(id.has_value());
      if (!id) continue;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (input_ids[i] != id) continue;
        const std::string what = "is an input file, which the output would destroy";
        return Status::InvalidArgument(t == inputs[i] ? what : what + ": " + inputs[i]).WithPath(t);
      }
    }
  }
  if (force) return Status::OK();
  for (size_t k = 0; k < files.written.size(); ++k)
    if (exists[k]) return Status::InvalidArgument("exists; use --force to replace it").WithPath(files.written[k]);
  for (size_t k = 0; k < files.removed.size(); ++k)
    if (exists[files.written.size() + k])
      return Status::InvalidArgument("is part of an earlier save in the output folder; use --force to replace it")
          .WithPath(files.removed[k]);
  return Status::OK();
}

Status CheckFreeSpace(Env* env, const std::string& where, uint64_t needed) {
  // An existing file is asked itself: through a symlink, the file system
  // asked is its target's, where the replacement is written.
  std::string folder = where;
  while (!env->FileExists(folder)) {
    std::string parent = ParentOf(folder);
    if (parent == folder) break;
    folder = parent;
  }
  Result<uint64_t> free = env->FreeBytes(folder);
  if (!free.ok()) return Status::OK();  // a file system that cannot tell: the writes will
  if (*free >= needed) return Status::OK();
  return Status::IOError("needs " + std::to_string(needed) + " bytes for the output, and the file system holds " +
                         std::to_string(*free) + " free; nothing was written")
      .WithPath(where);
}

Status OutputRollback::CreateDirs(const std::string& folder) {
  std::vector<std::string> missing;  // innermost first
  for (std::string d = folder; !d.empty() && d != "." && d != "/" && !env_->IsDirectory(d); d = ParentOf(d)) {
    if (!missing.empty() && missing.back() == d) break;
    missing.push_back(d);
  }
  ZF_TRY(env_->CreateDirs(folder));
  folders_.insert(folders_.end(), missing.rbegin(), missing.rend());
  return Status::OK();
}

OutputRollback::~OutputRollback() {
  if (kept_) return;
  for (auto it = files_.rbegin(); it != files_.rend(); ++it) env_->RemoveFile(*it).IgnoreError();
  for (auto it = folders_.rbegin(); it != folders_.rend(); ++it) env_->RemoveDir(*it).IgnoreError();
}

}  // namespace zerofold::output
