// What `zerofold scan` says of each file and of the whole scan (scan.h):
// the values the walk, the judges, the JSON lines and the C API share.
#ifndef ZEROFOLD_SCAN_RESULT_H_
#define ZEROFOLD_SCAN_RESULT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/status.h"

namespace zerofold::scan {

enum class Verdict { kSafe, kUnsafe, kCorrupt, kAmbiguous, kUnreadable, kNotCheckpoint };
// "safe", "unsafe", "corrupt", "ambiguous", "unreadable", "not a checkpoint"
// (the JSON spelling; never change).
std::string_view VerdictName(Verdict v);

struct ScanOptions {
  torch::ReadOptions read;  // limits; locate_records is set by the scan
  // Reads every tensor's bytes and groups identical ones (duplicates.h).
  bool hash = false;
  // Bytes read per hashing read.
  size_t buffer_bytes = size_t{4} << 20;
  // Called as the scan goes, at least once per file: the file being
  // judged, the bytes of the files judged so far (with hash: and of the
  // one being hashed), and the bytes of every file under the PATHs (counted
  // by a walk ahead of the scan, made only when progress is set).
  std::function<void(const std::string& path, uint64_t done, uint64_t total)> progress;
};

struct FileResult {
  std::string path;
  Verdict verdict = Verdict::kNotCheckpoint;
  // What was read: "torch-zip", "torch-legacy", "safetensors", "pickle",
  // "hf-index", "dcp-metadata", "dcp-data"; "" for not a checkpoint.
  std::string format;
  Status error;        // corrupt, ambiguous, unreadable: the reader's error
  std::string note;    // not a checkpoint: what it is instead
  std::vector<std::string> unsafe_globals;
  uint64_t file_bytes = 0;
  uint64_t tensors = 0;
  uint64_t stored_bytes = 0;      // in storages (DCP data: in the items .metadata names)
  uint64_t referenced_bytes = 0;  // referenced by views (DCP data: those items' bytes)
  // What `zerofold shrink FILE` saves (input minus planned output size);
  // unset when shrink does not take the file (not a torch file, refused).
  std::optional<uint64_t> shrink_saves;
  uint64_t optimizer_bytes = 0;
  bool hashed = false;  // every tensor of it was hashed
};

// A set of identical tensor data: the copies beyond the first waste
// `nbytes` each.
struct DuplicateGroup {
  std::string hash;                 // xxh3-128, 32 hex digits
  uint64_t nbytes = 0;              // of one copy
  std::vector<std::string> copies;  // "FILE: TENSOR", in the order met
  uint64_t wasted() const { return nbytes * (copies.size() - 1); }
};

struct Totals {
  uint64_t files = 0;
  uint64_t by_verdict[6] = {};  // indexed by Verdict
  uint64_t file_bytes = 0;
  uint64_t stored_bytes = 0;
  uint64_t referenced_bytes = 0;
  uint64_t shrink_saves = 0;
  uint64_t optimizer_bytes = 0;
  bool hashed = false;
  std::vector<DuplicateGroup> duplicates;  // by wasted bytes, largest first
  uint64_t duplicate_wasted_bytes = 0;
  // The first failure of the walk itself (a PATH that does not exist, a
  // folder that cannot be listed), and the first file's error.
  Status first_error;
};

// The status a non-safe result stands for (its error; kUnsafe naming the
// globals), OK for safe and not-a-checkpoint files.
Status ResultStatus(const FileResult& r);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_RESULT_H_
