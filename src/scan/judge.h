// Judging one file (scan.h says how): the scan's step, apart from the walk
// and from the folders judged as wholes (folders.h).
#ifndef ZEROFOLD_SCAN_JUDGE_H_
#define ZEROFOLD_SCAN_JUDGE_H_

#include <cstdint>
#include <functional>
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

// `r` with the error `s`: its verdict (VerdictOf) and the error, the path
// added when the error has none.
FileResult WithError(FileResult r, Status s);

// Judges the file `path` alone (not in a DCP folder, not an index).
// With options.hash, its tensors go into `dups`.
FileResult JudgeFile(Env* env, const std::string& path, const ScanOptions& options, DuplicateIndex* dups,
                     const HashProgress& progress);

// `r` with a folder's error: a file judged safe or not a checkpoint takes
// the error's verdict; a worse verdict stands.
FileResult WithFolderError(FileResult r, const Status& s);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_JUDGE_H_
