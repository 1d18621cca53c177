// Parts of one output for batch engines (--part I/N, --part finish): the
// output files of a merge or a folder shrink/convert divided into N
// independent parts that a Slurm job array (or any launcher) runs side by
// side, then one finishing step that checks every file and writes the
// index. Every part computes the same plan from the inputs, so the
// division needs no coordination. One mechanism for merge and shrink.
//
// I is 0-based (0..N-1), as SLURM_ARRAY_TASK_ID is with --array=0-$((N-1)).
#ifndef ZEROFOLD_OPS_PARTS_H_
#define ZEROFOLD_OPS_PARTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ops {

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
// committed whole). False when absent; the size error of another size.
Result<bool> FileComplete(Env* env, const std::string& path, uint64_t planned_bytes);

// For --part finish: kCorrupt naming the first planned file that is absent
// or of another size, with the part that writes it.
Status CheckPartsComplete(Env* env, const std::vector<std::string>& paths, const std::vector<uint64_t>& bytes);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_PARTS_H_
