// Parts of one output for batch engines (--part I/N, --part finish): the
// output files of a merge or a folder shrink/convert divided into N
// independent parts that a Slurm job array (or any launcher) runs side by
// side, then one finishing step that checks every file and writes the
// index. Every part computes the same plan from the inputs, so the
// division needs no coordination. One mechanism for merge and shrink.
//
// I is 0-based (0..N-1), as SLURM_ARRAY_TASK_ID is with --array=0-$((N-1)).
#ifndef ZEROFOLD_OUTPUT_PARTS_H_
#define ZEROFOLD_OUTPUT_PARTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::output {

struct PartSpec {
  enum class Kind : uint8_t { kAll, kPart, kFinish };
  Kind kind = Kind::kAll;  // kAll: no --part, the whole output in one run
  uint32_t index = 0;      // kPart: 0..count-1
  uint32_t count = 1;      // kPart: N >= 1
};

// Parses the value of --part: "I/N" with 0 <= I < N, or "finish".
// kInvalidArgument with a one-line reason otherwise.
Result<PartSpec> ParsePart(const std::string& text);

// The part (0..parts-1) of every file of `file_bytes`: largest file first
// (ties: lower index first) onto the part with the fewest bytes so far
// (ties: lower part first). Deterministic: the same sizes give the same
// assignment on every machine. `parts` >= 1.
std::vector<uint32_t> AssignParts(const std::vector<uint64_t>& file_bytes, uint32_t parts);

// A planned output file is complete when it exists with exactly the
// planned size (outputs are written atomically, so a present file was
// committed whole). False when absent; kInvalidArgument (path: the file)
// giving both sizes and naming --force when present with another size.
Result<bool> FileComplete(Env* env, const std::string& path, uint64_t planned_bytes);

// For --part finish: kCorrupt naming the first planned file that is absent
// (its part has not finished); kInvalidArgument naming the first present
// with another size (a plan of other flags: finish is told to use the
// parts' flags).
Status CheckPartsComplete(Env* env, const std::vector<std::string>& paths, const std::vector<uint64_t>& bytes);

// The planned output files of one run, and what --part makes of them.
// Callers fill paths and bytes (every file of the plan, in plan order,
// whatever the part); SelectPartFiles fills the rest.
struct PartFiles {
  std::vector<std::string> paths;    // every planned output file
  std::vector<uint64_t> bytes;       // each one's exact planned size
  std::vector<uint32_t> file_parts;  // kPart: each file's part (AssignParts over bytes); else empty
  std::vector<bool> write;           // whether this run writes each file
  std::vector<std::string> skipped;  // kPart: the part's files found complete, not rewritten
};

// Decides which files this run writes:
//   kAll     every file;
//   kPart    the files of part `index`, except those already complete
//            (FileComplete) unless `force`; a file present with another
//            size is kInvalidArgument naming it, its size and the planned
//            size (with `force` it is rewritten);
//   kFinish  none; unless dry_run, CheckPartsComplete over every file.
// REQUIRES: files.paths.size() == files.bytes.size().
Status SelectPartFiles(Env* env, const PartSpec& part, bool force, bool dry_run, PartFiles& files);

// Whether --verify checks file k in this run: every file for kAll and
// kFinish, the part's own (written or found complete) for kPart.
// REQUIRES: `files` went through SelectPartFiles with `part`.
bool VerifiesFile(const PartSpec& part, const PartFiles& files, size_t k);

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_PARTS_H_
