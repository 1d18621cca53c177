// The output-target policy every job shares (shrink, convert, merge, --part
// finish, and the C API, which calls the same jobs): how OUT's name is read,
// which format a run writes, which existing files it may replace, whether
// the disk holds the output, and how a failed run takes back what it put in
// place.
//
// Names (ResolveTarget), the same for every job:
//   "-"                 standard output: the bytes of one file;
//   "X/", or a name that is an existing folder: a folder;
//   otherwise a file, whose name says its format (FormatByName):
//   ".safetensors" safetensors; ".bin", ".pt", ".pth", ".ckpt" torch; "X.zst"
//   X's format, compressed with zstd. When IN is a folder, a name that says
//   no format is a folder ("out", "llama-3.1-8b"), but a name with an
//   extension no format has ("model.st") is refused: it could mean either;
//   so is a bare extension (".bin").
// Formats: --to, else the name's, else the job's default (shrink and merge:
// torch; convert has none). --to that contradicts the name, --max-shard-size
// or --part with an OUT that is no folder, and streams ('-', .zst) for a job
// that writes none (merge) are refused with one line.
//
// Files (CheckTargets), planned before any tensor byte is read: every file a
// run writes (the OUT file; a folder OUT's weights, index and copies) and
// every file of an earlier save it removes from a folder OUT is refused
// when it is an input by any name, and, without force, when it exists.
#ifndef ZEROFOLD_OUTPUT_TARGET_H_
#define ZEROFOLD_OUTPUT_TARGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "output/sharding.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::output {

// The format a file name says, as above; nullopt for other names.
std::optional<ShardFormat> FormatByName(std::string name);

enum class TargetKind : uint8_t { kFile, kFolder, kStdout };

struct Target {
  TargetKind kind = TargetKind::kFile;
  bool zstd = false;                         // a file named X.zst
  ShardFormat format = ShardFormat::kTorch;  // what the run writes
};

// What a job asks of OUT, and how its front end names the flags.
struct TargetRequest {
  bool input_is_folder = false;
  std::optional<ShardFormat> to;            // --to
  std::optional<ShardFormat> default_format;  // neither --to nor the name: nullopt refuses
  bool shards = false;                      // --max-shard-size given
  bool part = false;                        // --part I/N or finish
  bool streams = true;                      // the job writes '-' and X.zst
  const char* to_word = "--to";
  const char* shards_word = "--max-shard-size";
  const char* part_word = "--part";
  const char* choose_format = "add --to torch or --to safetensors";
};

// Reads OUT as described above. kInvalidArgument (one line; path: OUT where
// the name is at fault) for the refusals listed there.
Result<Target> ResolveTarget(Env* env, const std::string& out, const TargetRequest& request);

// The files a run writes and removes, as planned.
struct TargetFiles {
  // Every file the run writes: the OUT file, or a folder OUT's weights,
  // index and copies.
  std::vector<std::string> written;
  // Files of an earlier save in a folder OUT that the run removes (not in
  // `written`).
  std::vector<std::string> removed;
};

// kInvalidArgument (path: the file) when a file of `files` is one of
// `inputs` by any name (SameFile: also through "./", an absolute path, a
// symlink or a hard link): "is an input file, which the output would
// destroy"; and without `force` for the first written file that exists
// ("exists; use --force to replace it") or removed file ("is part of an
// earlier save in the output folder; use --force to replace it").
Status CheckTargets(Env* env, const std::vector<std::string>& inputs, const TargetFiles& files, bool force);

// Before writing: kIO (path: `where`) when the file system holding `where`
// (an existing file or folder, symlinks followed to their final target, as
// Env::NewAtomicFile writes through them; else its nearest existing parent
// folder) has fewer than `needed` bytes
// free for this user (Env::FreeBytes), giving both; the CLI exits 3.
Status CheckFreeSpace(Env* env, const std::string& where, uint64_t needed);

// What one run has put in place in its output folder, taken back unless the
// run completes: destroyed before Keep(), it removes the files committed
// through it, then the folders CreateDirs made (deepest first, each only
// when empty). Files that a committed file replaced under --force stay
// replaced.
class OutputRollback {
 public:
  explicit OutputRollback(Env* env) : env_(env) {}
  ~OutputRollback();
  OutputRollback(const OutputRollback&) = delete;
  OutputRollback& operator=(const OutputRollback&) = delete;

  // Creates `folder` and its missing parents, remembering those it made.
  Status CreateDirs(const std::string& folder);
  // A file the run committed (to be removed if the run fails).
  void Committed(const std::string& path) { files_.push_back(path); }
  // The run completed: nothing is taken back.
  void Keep() { kept_ = true; }
  // The committed files stay even if the run fails (a --part run's files
  // are complete, and a rerun skips them); empty folders it made still go.
  void KeepFiles() { files_.clear(); }

 private:
  Env* env_;
  std::vector<std::string> files_;
  std::vector<std::string> folders_;  // created, outermost first
  bool kept_ = false;
};

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_TARGET_H_
