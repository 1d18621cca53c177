#include "scan/judge.h"

#include "scan/optimizer.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "dcp/folder.h"
#include "dcp/metadata.h"
#include "dcp/plan.h"
#include "model/checkpoint_file.h"
#include "model/hf_folder.h"
#include "model/listing.h"
#include "pickle/decoder.h"
#include "rewrite/shrink.h"
#include "torch/digest.h"
#include "torch/dtype.h"
#include "torch/storage_source.h"
#include "zero/inspect.h"
#include "zip/archive.h"

namespace zerofold::scan {

namespace {

// Names that say "a checkpoint": a file so named that no reader takes is
// corrupt, not "not a checkpoint".
constexpr const char* kCheckpointExtensions[] = {".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".pkl", ".pickle"};

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool NamedLikeCheckpoint(const std::string& path) {
  for (const char* ext : kCheckpointExtensions)
    if (EndsWith(path, ext)) return true;
  return false;
}

// What the first bytes are.
struct Head {
  bool zip = false;        // "PK"
  bool proto = false;      // pickle PROTO (protocol 2 and up: every torch pickle)
  bool text_pickle = false;  // a protocol 0/1 pickle's first opcodes: GLOBAL, MARK, EMPTY_DICT/LIST/TUPLE
};

Head ReadHead(const RandomSource& src) {
  std::byte b[2] = {};
  Result<size_t> n = src.ReadAt(0, b);
  Head h;
  if (!n.ok() || *n < 2) return h;
  h.zip = b[0] == std::byte('P') && b[1] == std::byte('K');
  h.proto = b[0] == std::byte{0x80};
  const char c = static_cast<char>(b[0]);
  h.text_pickle = c == 'c' || c == '(' || c == '}' || c == ']' || c == ')';
  return h;
}

FileResult Failed(FileResult r, Status s) {
  r.verdict = VerdictOf(s);
  r.error = std::move(s);
  r.error.WithPath(r.path);
  return r;
}

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

// The file as a pickle: torch.load of a file that is no zip unpickles its
// first pickle before anything else (the legacy format's magic number), so
// that pickle is judged by its globals, whatever follows it. Unsafe when
// it names unsafe globals; safe when it is the whole file; nullopt when the
// file is neither (no pickle, or a safe one followed by other bytes: the
// torch reader's error stands). Reads a prefix first, the whole file (up
// to max_pickle_bytes) only when the pickle runs past it.
std::optional<FileResult> JudgeAsPickle(const RandomSource& src, FileResult r, const ScanOptions& options) {
  constexpr uint64_t kPrefixBytes = uint64_t{1} << 20;
  uint64_t want = std::min(src.size(), kPrefixBytes);
  for (;;) {
    if (!std::in_range<size_t>(want)) return std::nullopt;
    std::vector<std::byte> bytes(static_cast<size_t>(want));
    Result<size_t> n = src.ReadAt(0, bytes);
    if (!n.ok()) return Failed(std::move(r), n.status());
    if (*n != bytes.size()) return std::nullopt;
    Result<pickle::Decoded> d = pickle::Decode(bytes, 0, options.read.pickle);
    if (!d.ok()) {
      const bool truncated = d.status().message().rfind("truncated", 0) == 0;
      if (!truncated || want == src.size() || src.size() > options.read.max_pickle_bytes) return std::nullopt;
      want = src.size();
      continue;
    }
    if (d->unsafe_globals.empty() && d->consumed != src.size()) return std::nullopt;
    r.format = "pickle";
    r.unsafe_globals = d->unsafe_globals;
    r.verdict = r.unsafe_globals.empty() ? Verdict::kSafe : Verdict::kUnsafe;
    if (d->consumed != src.size())
      r.note = "a pickle of " + std::to_string(d->consumed) + " bytes, then " +
               std::to_string(src.size() - d->consumed) + " other bytes";
    return r;
  }
}

// True when the zip archive `src` names a record data.pkl (torch 1.13
// finds names case-insensitively), or cannot be read as an archive: a zip
// torch could take for a checkpoint, judged corrupt when zerofold's reader
// refuses it, rather than "not a checkpoint".
bool HoldsPickle(const RandomSource& src, const ScanOptions& options) {
  Result<zip::Archive> archive = zip::ReadArchive(src, options.read.zip);
  if (!archive.ok()) return true;
  for (const zip::Entry& e : archive->entries) {
    std::string lower = e.name;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (EndsWith(lower, "data.pkl")) return true;
  }
  return false;
}

// What `zerofold shrink FILE` saves, from its own plan (in place: the
// output's archive folder is named as the input's).
std::optional<uint64_t> ShrinkSaves(Env* env, const std::string& path, const ScanOptions& options) {
  rewrite::ShrinkOptions shrink;
  shrink.read = options.read;
  shrink.keep_unsafe = true;
  shrink.dry_run = true;
  Result<rewrite::PlannedShrink> plan = rewrite::PlanShrinkFile(env, path, path, shrink);
  if (!plan.ok()) return std::nullopt;
  const rewrite::ShrinkReport& r = *plan->report;
  return r.input_file_bytes - std::min(r.input_file_bytes, r.output_file_bytes);
}

// Hashes each distinct view of `ckpt` (a tensor tied to another, the same
// bytes of one storage, counts once) into `dups`.
Status HashTensors(const RandomSource& src, const torch::Checkpoint& ckpt, const FileResult& r,
                   const ScanOptions& options, DuplicateIndex* dups, const HashProgress& progress) {
  std::vector<std::byte> buffer(std::max(options.buffer_bytes, torch::kMinDigestBuffer));
  std::set<std::tuple<uint32_t, uint64_t, uint64_t, torch::DType, std::vector<int64_t>>> seen;
  uint64_t hashed = 0;
  // One reader of the file's records: each deflated record is inflated
  // once, and Finish checks what the records declare (sizes, CRC-32).
  torch::StorageSources sources(src);
  for (const torch::Tensor& t : ckpt.tensors) {
    if (t.nbytes() == 0) continue;
    ZF_ASSIGN_OR_RETURN(torch::ByteRange extent, torch::ViewExtent(t));
    if (!seen.emplace(t.storage, extent.begin, extent.end, t.dtype, t.shape).second) continue;
    ZF_ASSIGN_OR_RETURN(torch::Hash128 h, torch::TensorDigest(sources, ckpt, t, buffer));
    dups->Add(h, t.nbytes(), r.path + ": " + t.name);
    hashed += t.nbytes();
    if (progress) progress(hashed);
  }
  return sources.Finish();
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
  if (at->second.verdict == Verdict::kSafe) at->second = Failed(at->second, s);
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

Verdict VerdictOf(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return Verdict::kSafe;
    case Code::kUnsafe: return Verdict::kUnsafe;
    case Code::kAmbiguous: return Verdict::kAmbiguous;
    case Code::kIO:
    case Code::kNotFound:
    case Code::kCancelled: return Verdict::kUnreadable;
    default: return Verdict::kCorrupt;
  }
}

FileResult JudgeFile(Env* env, const std::string& path, const ScanOptions& options, DuplicateIndex* dups,
                     const HashProgress& progress) {
  FileResult r;
  r.path = path;
  Result<std::unique_ptr<RandomSource>> opened = env->OpenRandom(path);
  if (!opened.ok() && opened.status().code() == Code::kInvalidArgument) {
    r.note = opened.status().message();  // a device, a socket: no file torch.load reads
    return r;
  }
  if (!opened.ok()) return Failed(std::move(r), opened.status());
  const RandomSource& src = **opened;
  r.file_bytes = src.size();
  const Head head = ReadHead(src);
  Result<model::FileFormat> sniffed = model::SniffFormat(src);
  if (!sniffed.ok()) return Failed(std::move(r), sniffed.status());
  const bool safetensors_bytes = *sniffed == model::FileFormat::kSafetensors && !EndsWith(path, ".safetensors");
  const bool checkpoint_bytes = head.zip || head.proto || safetensors_bytes;
  const bool named = NamedLikeCheckpoint(path);
  if (!checkpoint_bytes && !named) {
    // No torch file starts so (a legacy one starts with PROTO): only a
    // protocol 0 or 1 pickle might, and it is judged without the torch
    // reader, from a prefix (a large text file costs one small read).
    if (head.text_pickle)
      if (std::optional<FileResult> p = JudgeAsPickle(src, r, options)) return *p;
    r.note = src.size() == 0 ? "empty" : "no torch, safetensors or pickle bytes";
    return r;
  }
  torch::ReadOptions read = options.read;
  read.locate_records = true;  // local headers are metadata, and an audit checks them
  Result<model::CheckpointFile> file = model::ReadCheckpointFile(src, read, model::SafetensorsGraph::kSkip);
  if (!file.ok()) {
    const Status& s = file.status();
    if (s.code() == Code::kIO || s.code() == Code::kCancelled || s.code() == Code::kAmbiguous)
      return Failed(std::move(r), s);
    if (*sniffed != model::FileFormat::kSafetensors && !head.zip)
      if (std::optional<FileResult> p = JudgeAsPickle(src, r, options)) return *p;
    if (!named && head.zip && !HoldsPickle(src, options)) {
      r.note = "a zip archive with no data.pkl";
      return r;
    }
    return Failed(std::move(r), s);
  }
  const torch::Checkpoint& ckpt = file->ckpt;
  const model::Listing listing = model::ListCheckpoint(ckpt, path);
  r.format = std::string(model::FileFormatName(file->format == model::FileFormat::kSafetensors
                                                   ? model::FileFormat::kSafetensors
                                                   : listing.format));
  r.tensors = ckpt.tensors.size();
  r.stored_bytes = listing.stored_bytes;
  r.referenced_bytes = listing.referenced_bytes;
  r.unsafe_globals = ckpt.unsafe_globals;
  r.verdict = r.unsafe_globals.empty() ? Verdict::kSafe : Verdict::kUnsafe;
  for (const torch::Tensor& t : ckpt.tensors)
    if (IsOptimizerStatePath(RulePath(t.path))) r.optimizer_bytes += t.nbytes();
  if (file->format != model::FileFormat::kSafetensors) r.shrink_saves = ShrinkSaves(env, path, options);
  if (options.hash) {
    Status s = HashTensors(src, ckpt, r, options, dups, progress);
    if (!s.ok()) {
      if (r.verdict == Verdict::kSafe) r.verdict = VerdictOf(s);
      r.error = std::move(s);
      r.error.WithPath(path);
    } else {
      r.hashed = true;
    }
  }
  return r;
}

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
    out.emplace(dcp::kMetadataFile, Failed(md, loaded.status()));
    // The data files cannot be read without it: they share its verdict.
    Result<std::vector<DirEntry>> entries = env->ListDir(dir);
    if (!entries.ok()) return out;
    for (const DirEntry& e : *entries) {
      if (e.is_dir || !EndsWith(e.name, ".distcp")) continue;
      FileResult d;
      d.path = model::JoinPath(dir, e.name);
      d.format = "dcp-data";
      if (Result<std::unique_ptr<RandomSource>> f = env->OpenRandom(d.path); f.ok()) d.file_bytes = (*f)->size();
      out.emplace(e.name, Failed(d, Followed(loaded.status())));
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
          out[dcp::kMetadataFile] = Failed(out[dcp::kMetadataFile],
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
      d = Failed(d, Status::Corrupt(item.range_error).WithRecord(item.fqn));
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
        d = Failed(d, f.status());
        d.hashed = false;
        continue;
      }
      open_file = std::move(*f);
      open_name = item.relative_path;
    }
    Result<torch::Hash128> h = HashRange(*open_file, item.offset_in_file, item.length, options.buffer_bytes);
    if (!h.ok()) {
      d = Failed(d, Status(h.status()).WithRecord(item.fqn));
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
      r = Failed(r, s);
    }
    out.emplace(name, r);
  }
  return out;
}

}  // namespace zerofold::scan

namespace zerofold::scan {

FileResult WithFolderError(FileResult r, const Status& s) {
  if (r.verdict != Verdict::kSafe && r.verdict != Verdict::kNotCheckpoint) return r;
  return Failed(std::move(r), s);
}

std::optional<std::pair<std::string, Status>> DeepSpeedFolderError(Env* env, const std::string& dir,
                                                                   const std::vector<DirEntry>& entries,
                                                                   const ScanOptions& options) {
  std::string tracker, first_states;
  for (const DirEntry& e : entries) {
    if (e.is_dir) continue;
    if (tracker.empty() && (e.name == "latest" || e.name == "latest_universal")) tracker = e.name;
    if (first_states.empty() && EndsWith(e.name, "_states.pt")) first_states = e.name;
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
