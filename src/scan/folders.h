// The folders `zerofold scan` judges as wholes besides their files (scan.h
// says how): Distributed Checkpoint and torch_dist folders, Hugging Face
// indexes, DeepSpeed checkpoints; through their formats' own readers.
#ifndef ZEROFOLD_SCAN_FOLDERS_H_
#define ZEROFOLD_SCAN_FOLDERS_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scan/duplicates.h"
#include "scan/judge.h"
#include "scan/result.h"
#include "zerofold/env.h"

namespace zerofold::scan {

// The results of a DCP folder's files (dcp::FindDcpFolder found `dir`
// itself, holding .metadata), by file name in `dir`: .metadata and each
// data file .metadata names that exists. Empty when `dir` is no such folder.
std::map<std::string, FileResult> JudgeDcpFolder(Env* env, const std::string& dir, const ScanOptions& options,
                                                 DuplicateIndex* dups, const HashProgress& progress);

// The results of the Hugging Face index files in `dir`, by file name:
// safe when model::ResolveModelPath's check passes for that index, else
// its error's verdict. Empty when `dir` has no index file.
std::map<std::string, FileResult> JudgeHfIndexes(Env* env, const std::string& dir, const ScanOptions& options);

// A DeepSpeed checkpoint folder's own error (zero::IsDeepSpeedFolder and
// `dir` holds `latest`, `latest_universal` or *_states.pt files: what
// zero::InspectZeroCheckpoint, which merge's planner shares, refuses as a
// whole: a missing rank's file, a `latest` naming no tag folder), as the
// name of the file in `dir` it goes to (the file the error names, else
// `latest` or `latest_universal`, else the first *_states.pt) and the error
// (a file of the checkpoint that is missing is the checkpoint's fault:
// kCorrupt). nullopt when `dir` is no such folder or reads whole. A
// refusal of merge (a layout it does not take) is no error.
std::optional<std::pair<std::string, Status>> DeepSpeedFolderError(Env* env, const std::string& dir,
                                                                   const std::vector<DirEntry>& entries,
                                                                   const ScanOptions& options);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_FOLDERS_H_
