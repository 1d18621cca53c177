#include "scan/folders.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>

#include "dcp/folder.h"
#include "dcp/metadata.h"
#include "dcp/plan.h"
#include "model/hf_folder.h"
#include "scan/judge.h"
#include "scan/optimizer.h"
#include "torch/digest.h"
#include "torch/dtype.h"
#include "zero/inspect.h"

namespace zerofold::scan {

namespace {

// A DCP data file's status when its folder's .metadata failed with `s`:
// the same code (so the same verdict), saying why.
Status Followed(const Status& s) {
  std::string why = "not read: its folder's .metadata failed: " + s.message();
  switch (s.code()) {
    case Code::kUnsafe: return Status::Unsafe(std::move(why));
    case Code::kAmbiguous: return Status::Ambiguous(std::move(why));
    case Code::kIO: return Status::IOError(std::move(why));
    case Code::kLimit: return Status::Limit(std::move(why));
    case Code::kUnsupported: return Status::Unsupported(std::move(why));
    default: return Status::Corrupt(std::move(why));
  }
}

// The xxh3-128 of `length` bytes of `src` at `offset` (a DCP chunk's
// stored bytes), read `buffer_bytes` at a time.
Result<torch::Hash128> HashRange(const RandomSource& src, uint64_t offset, uint64_t length, size_t buffer_bytes) {
  torch::Xxh3Hasher hasher;
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(buffer_bytes, 64), length)));
  for (uint64_t done = 0; done < length;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), length - done));
    ZF_ASSIGN_OR_RETURN(size_t n, src.ReadAt(offset + done, std::span(buffer).first(want)));
    if (n != want)
      return Status::Corrupt("truncated: the chunk ends past the file's end, at " + std::to_string(offset + done + n))
          .WithOffset(offset + done + n);
    hasher.Update(std::span(buffer).first(want));
    done += want;
  }
  return hasher.Digest();
}

// A DCP folder's error `s`, given to the result of the file it names, else
// to .metadata's, else to the first file's (the safetensors form has no
// .metadata), unless that file has a worse verdict already.
void Attach(const std::string& dir, const Status& s, std::map<std::string, FileResult>* out) {
  if (s.ok() || out->empty()) return;
  const std::string prefix = model::JoinPath(dir, "");
  std::string name = s.path().rfind(prefix, 0) == 0 ? s.path().substr(prefix.size()) : std::string();
  auto at = out->find(name);
  if (at == out->end()) at = out->find(dcp::kMetadataFile);
  if (at == out->end()) at = out->begin();
  if (at->second.verdict == Verdict::kSafe) at->second = WithError(at->second, s);
}

// The checks merge makes of a DCP folder beyond its .metadata (dcp::PlanDcp
// over every tensor key: chunks cover each tensor exactly and stay inside
// their files and the folder, each chunk archive holds one tensor of the
// chunk's dtype and shape and no unsafe global): the file the error names
// (else .metadata) gets its verdict, unless it has a worse one already.
void CheckAsMergeWould(Env* env, const std::string& dir, const dcp::Metadata& m, const ScanOptions& options,
                       std::map<std::string, FileResult>* out) {
  Result<dcp::Selection> selection = dcp::SelectKeys(m, std::string());
  Status s = selection.status();
  if (selection.ok()) {
    dcp::OpenFiles files;
    dcp::PlanOptions plan;
    plan.read = options.read;
    s = dcp::PlanDcp(env, dir, m, *selection, plan, &files).status();
  }
  Attach(dir, s, out);
}

}  // namespace

std::map<std::string, FileResult> JudgeDcpFolder(Env* env, const std::string& dir, const ScanOptions& options,
                                                 DuplicateIndex* dups, const HashProgress& progress) {
  std::map<std::string, FileResult> out;
  std::optional<dcp::DcpFolder> folder = dcp::FindDcpFolder(env, dir);
  if (!folder || folder->path != dir) return out;
  if (!folder->hf_shards.empty()) {
    // The safetensors form: each shard a safetensors file, then the folder's checks.
    for (const std::string& shard : folder->hf_shards) {
      const std::string name = shard.substr(shard.rfind('/') + 1);
      out.emplace(name, JudgeFile(env, model::JoinPath(dir, name), options, dups, progress));
    }
    Result<dcp::Metadata> md = dcp::LoadMetadata(env, *folder, options.read.max_pickle_bytes, options.read.pickle);
    if (md.ok()) CheckAsMergeWould(env, dir, *md, options, &out);
    else Attach(dir, md.status(), &out);
    return out;
  }
  const std::string md_path = model::JoinPath(dir, dcp::kMetadataFile);
  FileResult md;
  md.path = md_path;
  md.format = "dcp-metadata";
  if (Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(md_path); f.ok()) md.file_bytes = (*f)->size();
  Result<dcp::Metadata> loaded = dcp::LoadMetadata(env, *folder, options.read.max_pickle_bytes, options.read.pickle);
  if (!loaded.ok()) {
    out.emplace(dcp::kMetadataFile, WithError(md, loaded.status()));
    // The data files cannot be read without it: they share its verdict.
    Result<std::vector<DirEntry>> entries = env->ListDir(dir);
    if (!entries.ok()) return out;
    for (const DirEntry& e : *entries) {
      if (e.is_dir || !std::string_view(e.name).ends_with(".distcp")) continue;
      FileResult d;
      d.path = model::JoinPath(dir, e.name);
      d.format = "dcp-data";
      if (Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(d.path); f.ok()) d.file_bytes = (*f)->size();
      out.emplace(e.name, WithError(d, Followed(loaded.status())));
    }
    return out;
  }
  const dcp::Metadata& m = *loaded;
  md.verdict = Verdict::kSafe;
  out.emplace(dcp::kMetadataFile, md);
  std::map<std::string, const dcp::Entry*> entries;
  for (const dcp::Entry& e : m.entries) entries.emplace(e.key, &e);
  // The data file being hashed: one open at a time, whatever the folder's size.
  std::string open_name;
  std::unique_ptr<RandomSource> open_file;
  for (const dcp::StorageItem& item : m.storage) {
    if (item.relative_path.empty() || item.relative_path.find('/') != std::string::npos) continue;
    const std::string path = model::JoinPath(dir, item.relative_path);
    auto at = out.find(item.relative_path);
    if (at == out.end()) {
      FileResult d;
      d.path = path;
      d.format = "dcp-data";
      Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(path);
      if (!f.ok()) {
        // Named by .metadata, not there: .metadata's fault (NotFound is no I/O failure here).
        if (f.status().code() == Code::kNotFound && out[dcp::kMetadataFile].verdict == Verdict::kSafe)
          out[dcp::kMetadataFile] = WithError(out[dcp::kMetadataFile],
                                           Status::Corrupt("names data file " + item.relative_path + ", which is missing")
                                               .WithPath(md_path));
        continue;
      }
      d.file_bytes = (*f)->size();
      d.verdict = Verdict::kSafe;
      d.hashed = options.hash;
      at = out.emplace(item.relative_path, d).first;
    }
    FileResult& d = at->second;
    if (!item.offset) continue;  // a bytes value: no tensor
    d.stored_bytes += item.length;
    d.referenced_bytes += item.length;
    if (!item.range_error.empty() && d.verdict == Verdict::kSafe)
      d = WithError(d, Status::Corrupt(item.range_error).WithRecord(item.fqn));
    auto e = entries.find(item.fqn);
    if (e != entries.end()) {
      for (const dcp::Chunk& c : e->second->chunks) {
        if (c.offsets != *item.offset) continue;
        ++d.tensors;
        if (!IsOptimizerStatePath(RulePath(item.fqn))) break;
        uint64_t n = torch::Info(e->second->dtype).itemsize;
        for (int64_t s : c.sizes) n *= static_cast<uint64_t>(std::max<int64_t>(s, 0));
        d.optimizer_bytes += n;
        break;
      }
    }
    if (!options.hash || d.verdict != Verdict::kSafe || item.length == 0 || !item.range_error.empty()) continue;
    if (open_name != item.relative_path) {
      open_file.reset();
      Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(path);
      if (!f.ok()) {
        d = WithError(d, f.status());
        d.hashed = false;
        continue;
      }
      open_file = std::move(*f);
      open_name = item.relative_path;
    }
    Result<torch::Hash128> h = HashRange(*open_file, item.offset_in_file, item.length, options.buffer_bytes);
    if (!h.ok()) {
      d = WithError(d, Status(h.status()).WithRecord(item.fqn));
      d.hashed = false;
      continue;
    }
    std::string where = path + ": " + item.fqn;
    for (size_t i = 0; i < item.offset->size(); ++i) where += (i ? "," : "[") + std::to_string((*item.offset)[i]);
    dups->Add(*h, item.length, where + (item.offset->empty() ? "" : "]"));
    if (progress) progress(d.stored_bytes);
  }
  CheckAsMergeWould(env, dir, m, options, &out);
  return out;
}

std::map<std::string, FileResult> JudgeHfIndexes(Env* env, const std::string& dir, const ScanOptions& options) {
  std::map<std::string, FileResult> out;
  std::vector<std::string> names;
  for (const char* name : {model::kTorchIndexName, model::kSafetensorsIndexName})
    if (env->FileExists(model::JoinPath(dir, name))) names.push_back(name);
  if (names.empty()) return out;
  model::ListOptions list;
  list.torch = options.read;
  Result<model::ModelFiles> files = model::ResolveModelPath(env, dir, list);
  for (const std::string& name : names) {
    FileResult r;
    r.path = model::JoinPath(dir, name);
    r.format = "hf-index";
    if (Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(r.path); f.ok()) r.file_bytes = (*f)->size();
    r.verdict = Verdict::kSafe;
    if (!files.ok() && files.status().path() == r.path) {
      Status s = files.status();
      // A shard the index names but the folder lacks is the index's fault.
      if (s.code() == Code::kNotFound) s = Status::Corrupt(s.message()).WithPath(r.path);
      r = WithError(r, s);
    }
    out.emplace(name, r);
  }
  return out;
}

std::optional<std::pair<std::string, Status>> DeepSpeedFolderError(Env* env, const std::string& dir,
                                                                   const std::vector<DirEntry>& entries,
                                                                   const ScanOptions& options) {
  std::string tracker, first_states;
  for (const DirEntry& e : entries) {
    if (e.is_dir) continue;
    if (tracker.empty() && (e.name == "latest" || e.name == "latest_universal")) tracker = e.name;
    if (first_states.empty() && std::string_view(e.name).ends_with("_states.pt")) first_states = e.name;
  }
  if ((tracker.empty() && first_states.empty()) || !zero::IsDeepSpeedFolder(env, dir)) return std::nullopt;
  Result<zero::ZeroInspection> z = zero::InspectZeroCheckpoint(env, dir, options.read);
  if (z.ok() || z.status().code() == Code::kCancelled) return std::nullopt;
  Status s = z.status();
  if (s.code() == Code::kNotFound) s = Status::Corrupt(s.message()).WithPath(s.path()).WithRecord(s.record());
  const std::string prefix = model::JoinPath(dir, "");
  std::string name = s.path().rfind(prefix, 0) == 0 ? s.path().substr(prefix.size()) : std::string();
  bool named_file = false;
  for (const DirEntry& e : entries) named_file = named_file || (!e.is_dir && e.name == name);
  if (!named_file) name = tracker.empty() ? first_states : tracker;
  return std::make_pair(name, std::move(s));
}

}  // namespace zerofold::scan
