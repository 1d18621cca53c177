// Judging one file, or one DCP folder's files (scan.h says how): the
// scan's step, apart from the walk.
#ifndef ZEROFOLD_SCAN_JUDGE_H_
#define ZEROFOLD_SCAN_JUDGE_H_

#include <functional>
#include <map>
#include <string>

#include "scan/duplicates.h"
#include "scan/result.h"
#include "zerofold/env.h"

namespace zerofold::scan {

// Called with the bytes hashed so far of the file being judged.
using HashProgress = std::function<void(uint64_t hashed)>;

// The verdict a reader's error gives (kUnsafe: unsafe; kAmbiguous:
// ambiguous; kIO, kNotFound: unreadable; anything else: corrupt).
Verdict VerdictOf(const Status& s);

// Judges the file `path` alone (not in a DCP folder, not an index).
// With options.hash, its tensors go into `dups`.
FileResult JudgeFile(Env* env, const std::string& path, const ScanOptions& options, DuplicateIndex* dups,
                     const HashProgress& progress);

// The results of a DCP folder's files (dcp::FindDcpFolder found `dir`
// itself, holding .metadata), by file name in `dir`: .metadata and each
// data file .metadata names that exists. Empty when `dir` is no such folder.
std::map<std::string, FileResult> JudgeDcpFolder(Env* env, const std::string& dir, const ScanOptions& options,
                                                 DuplicateIndex* dups, const HashProgress& progress);

// The results of the Hugging Face index files in `dir`, by file name:
// safe when model::ResolveModelPath's check passes for that index, else
// its error's verdict. Empty when `dir` has no index file.
std::map<std::string, FileResult> JudgeHfIndexes(Env* env, const std::string& dir, const ScanOptions& options);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_JUDGE_H_
