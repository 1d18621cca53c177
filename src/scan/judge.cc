#include "scan/judge.h"

#include "scan/optimizer.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "model/checkpoint_file.h"
#include "model/listing.h"
#include "pickle/decoder.h"
#include "rewrite/shrink.h"
#include "torch/digest.h"
#include "torch/dtype.h"
#include "torch/storage_source.h"
#include "zip/archive.h"

namespace zerofold::scan {

namespace {

// Names that say "a checkpoint": a file so named that no reader takes is
// corrupt, not "not a checkpoint".
constexpr const char* kCheckpointExtensions[] = {".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".pkl", ".pickle"};

bool NamedLikeCheckpoint(const std::string& path) {
  for (const char* ext : kCheckpointExtensions)
    if (std::string_view(path).ends_with(ext)) return true;
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
    if (!n.ok()) return WithError(std::move(r), n.status());
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
    if (std::string_view(lower).ends_with("data.pkl")) return true;
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

}  // namespace

FileResult WithError(FileResult r, Status s) {
  r.verdict = VerdictOf(s);
  r.error = std::move(s);
  r.error.WithPath(r.path);
  return r;
}

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
  if (!opened.ok()) return WithError(std::move(r), opened.status());
  const RandomSource& src = **opened;
  r.file_bytes = src.size();
  const Head head = ReadHead(src);
  Result<model::FileFormat> sniffed = model::SniffFormat(src);
  if (!sniffed.ok()) return WithError(std::move(r), sniffed.status());
  const bool safetensors_bytes = *sniffed == model::FileFormat::kSafetensors && !std::string_view(path).ends_with(".safetensors");
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
      return WithError(std::move(r), s);
    if (*sniffed != model::FileFormat::kSafetensors && !head.zip)
      if (std::optional<FileResult> p = JudgeAsPickle(src, r, options)) return *p;
    if (!named && head.zip && !HoldsPickle(src, options)) {
      r.note = "a zip archive with no data.pkl";
      return r;
    }
    return WithError(std::move(r), s);
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

FileResult WithFolderError(FileResult r, const Status& s) {
  if (r.verdict != Verdict::kSafe && r.verdict != Verdict::kNotCheckpoint) return r;
  return WithError(std::move(r), s);
}

}  // namespace zerofold::scan
