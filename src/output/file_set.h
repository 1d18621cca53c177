// The one writer of output files. A job (shrink, convert, merge) plans its
// output as a set of whole files, each with its exact size, a callback that
// writes its bytes and one that checks them; WriteFileSet then runs the
// protocol every job shares, once:
//
//   1. parts      --part I/N keeps the part's files (complete ones skipped),
//                 finish writes none (SelectPartFiles, output/parts.h);
//   2. targets    every file written or removed is refused when it is an
//                 input by any name, and without force when it exists; the
//                 free space must hold what the run writes (output/target.h,
//                 output/folder.h CheckFolderOutput);
//   3. read plan  the files' planned reads, then the tail's copies
//                 (io/read_plan.h), also for a dry run, which stops here;
//   4. write      each file into a temp file beside its target (standard
//                 output and X.zst as io::OpenNamedOutput opens them), then
//                 verified (--verify; files a run finds complete are
//                 verified as they are); once every file is, all are
//                 committed (in place: each, as soon as it is verified);
//   5. tail       a folder's copies of the input's other files, its index
//                 (a folder with an index is complete), then the removal of
//                 an earlier save's other files;
//   6. rollback   any error (or cancellation: the Env's) before the end
//                 removes every file the run committed and the folders it
//                 made (OutputRollback); a --part run keeps its complete
//                 files, which its rerun skips; in place, each file replaced
//                 its input atomically and stays.
#ifndef ZEROFOLD_OUTPUT_FILE_SET_H_
#define ZEROFOLD_OUTPUT_FILE_SET_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/read_plan.h"
#include "io/zstd_stream.h"
#include "output/folder.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::output {

// Reports `n` more payload bytes written (PlannedFile::payload's unit).
using WroteBytes = std::function<void(uint64_t n)>;

// One file of a job's plan.
struct PlannedFile {
  std::string path;        // its target: OUT, a file in folder OUT, or "-"
  uint64_t bytes = 0;      // its exact size (parts, free space); a stream's is uncompressed
  uint64_t payload = 0;    // what `write` reports through WroteBytes (progress)
  // Writes the whole file into `sink`, in order, reporting progress. Null:
  // the target holds the file already (in place, unchanged): nothing is
  // written and verify checks the target as it is.
  std::function<Status(Sink& sink, const WroteBytes& wrote)> write;
  // Compares a file (as written, before its commit; or as a part found it
  // complete) with what the plan says it holds, reporting progress in
  // payload units if it can. Null: --verify has nothing to compare for
  // this file.
  std::function<Status(const RandomSource& file, const WroteBytes& checked)> verify;
  io::ReadPlan reads;      // the reads of writing it, in order
};

// What a run writes.
struct FileSet {
  std::string out;         // OUT as given: a file, "-", "X.zst", or a folder
  bool folder = false;     // `files` are folder OUT's weights; `tail` applies
  bool in_place = false;   // each file replaces an input of the same path
  std::vector<PlannedFile> files;
  // folder: the copies and the index to write after the weights. `stale`
  // is filled by WriteFileSet: the files of an earlier save of `format`
  // in OUT (output/folder.h EarlierSave), removed last.
  FolderTail tail;
  ShardFormat format = ShardFormat::kTorch;
  std::vector<std::string> inputs;  // every file the run reads: never a target
  // Runs after the checks, before the first byte is written (not in a dry
  // run): the job's last checks of its inputs.
  std::function<Status()> prepare;
};

// Where a run is, for progress: writing (or, `verifying`, checking) file
// `file` of `files` (0-based, among those this run writes, or checks) and
// the payload bytes of the whole run's writing (or checking).
struct SetProgress {
  size_t file = 0;
  size_t files = 0;
  uint64_t done = 0;
  uint64_t total = 0;
  bool verifying = false;
};

struct FileSetOptions {
  PartSpec part;
  bool force = false;
  bool dry_run = false;
  bool verify = false;
  size_t buffer_bytes = size_t{4} << 20;  // copies of the tail
  io::ZstdOptions zstd;                   // "X.zst" outputs
  io::ReadPlan* read_plan = nullptr;      // when set: filled as step 3 says
  std::function<void(const SetProgress&)> progress;
  // Called as file k is complete (written and checked, or found complete
  // by a part, or planned in a dry run), in order, before the commits;
  // `skipped`: not written by this run. A later failure still removes
  // what the run wrote.
  std::function<void(size_t k, bool skipped)> file_done;
};

struct FileSetReport {
  // Every planned file, its part and what this run wrote (SelectPartFiles).
  PartFiles parts;
  // Per file: the bytes that reached its target in this run (compressed
  // for X.zst; the planned size when not written).
  std::vector<uint64_t> stored_bytes;
  std::vector<std::string> copied;   // tail copies written (names)
  std::vector<std::string> removed;  // earlier save's files removed (names)
};

// The protocol's options from a job's (shrink, convert, merge options all
// name these fields alike): dry_run, verify, buffer_bytes, read_plan.
template <typename JobOptions>
FileSetOptions FileSetOptionsOf(const JobOptions& job) {
  FileSetOptions o;
  o.dry_run = job.dry_run;
  o.verify = job.verify;
  o.buffer_bytes = job.buffer_bytes;
  o.read_plan = job.read_plan;
  return o;
}

// Runs the protocol above over `set`. Errors name the file they concern;
// after an error nothing the run made is left under a final name (but a
// part's complete files and in-place replacements).
// REQUIRES: set.files not empty; `part` other than kAll only with a folder.
Result<FileSetReport> WriteFileSet(Env* env, FileSet& set, const FileSetOptions& options);

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_FILE_SET_H_
