// CommittedFiles: the files a run into an output folder has committed so
// far, removed again unless the run completes.
//
// A folder output is many files, each committed (renamed into place) when
// complete. A run that fails or is cancelled (io/cancel_env.h) after some
// of them must not leave them: a folder of shards without its index looks
// like a save. Each job adds a file when its commit succeeds and calls
// Keep() once the last file (the index) is in place; destroyed without
// Keep(), the object removes every file added (best effort: a failed
// removal is ignored, as there is no one left to report it to). Files
// replaced under --force stay replaced: their old bytes are gone.
//
// A --part run keeps its files whatever happens (roll_back false): each is
// complete, and the part's rerun skips it (output/parts.h).
//
// Thread safety: none; one job uses it. Lifetime: `env` outlives it.
#ifndef ZEROFOLD_OUTPUT_COMMITTED_FILES_H_
#define ZEROFOLD_OUTPUT_COMMITTED_FILES_H_

#include <string>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::output {

class CommittedFiles {
 public:
  CommittedFiles(Env* env, bool roll_back) : env_(env), roll_back_(roll_back) {}
  CommittedFiles(const CommittedFiles&) = delete;
  CommittedFiles& operator=(const CommittedFiles&) = delete;
  ~CommittedFiles();

  // `path` was committed by this run.
  void Add(const std::string& path) { paths_.push_back(path); }
  // The run completed: the files stay.
  void Keep() { roll_back_ = false; }

 private:
  Env* env_;
  bool roll_back_;
  std::vector<std::string> paths_;
};

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_COMMITTED_FILES_H_
