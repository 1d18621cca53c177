// MemEnv: an Env whose files and folders live in memory, for tests.
//
// Behaves as src/io/posix_env.cc does where callers can tell:
//   - an open RandomSource keeps reading the bytes the file had when it was
//     opened, also after the path is replaced or removed (as an open fd does);
//   - NewAtomicFile creates a visible temp file named as io/temp_name.h says,
//     for writer kMemWriter with random part N (1, 2, ...), in the target's
//     folder (kNotFound if the folder is missing); Commit() renames it over
//     the target; a sink destroyed uncommitted removes its temp; the first
//     one in a folder sweeps it of temp files whose writers are gone, as
//     SetProcess() describes the process table;
//   - errors use the same codes and carry the path (kNotFound for missing
//     files, kInvalidArgument for opening a folder as a file).
// Paths are strings: "a//b/" and "./a/b" are normalized to "a/b"; there is
// no current directory beyond that, and no symlinks. Link() makes a second
// name for a file, as a hard link does; GetFileId gives every file and folder
// a stable id (a file's is FileId(path)).
//
// It also checks the caller's side of the contracts in zerofold/env.h and
// records each breach in violations(): reading a stream again after it
// returned 0 (end of stream), appending to or committing a sink after a
// successful Commit().
//
// Thread safety: every method may be called from any thread.
// Lifetime: sources and sinks must not outlive the MemEnv.
#ifndef ZEROFOLD_IO_MEM_ENV_H_
#define ZEROFOLD_IO_MEM_ENV_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/temp_name.h"
#include "zerofold/env.h"

namespace zerofold::io {

// Reads all of src into a string; kLimit if it holds more than max_bytes.
// The test doubles' ReadSmallFile.
Result<std::string> ReadWholeSource(const RandomSource& src, uint64_t max_bytes);

class MemEnv final : public Env {
 public:
  MemEnv() = default;
  MemEnv(const MemEnv&) = delete;
  MemEnv& operator=(const MemEnv&) = delete;
  ~MemEnv() override = default;

  // Test setup: creates or replaces a file (and its parent folders).
  void SetFile(const std::string& path, std::vector<std::byte> bytes);
  void SetFile(const std::string& path, std::string_view text);
  // The file's bytes; nullopt if there is no such file.
  std::optional<std::vector<std::byte>> GetFile(const std::string& path) const;
  // Every file path, sorted (temp files included).
  std::vector<std::string> Files() const;
  // Changes whenever the path gets a new file (create, replace, rename
  // onto it), like an inode number; 0 if there is no such file.
  uint64_t FileId(const std::string& path) const;
  // Test setup: `link` (and its parent folders) becomes a second name of
  // the file at `existing`, as a hard link: the same bytes and FileId, until
  // either name gets a new file. False, changing nothing, if there is no
  // file at `existing`.
  bool Link(const std::string& existing, const std::string& link);
  // What OpenStream("-") reads and what StdoutSink() wrote.
  void SetStdin(std::vector<std::byte> bytes);
  std::vector<std::byte> StdoutBytes() const;
  // The writer temp files are named for: machine 0, boot 0, pid 1, start 1.
  static constexpr WriterId kMemWriter = {0, 0, 1, 1};
  // Process `pid` runs, started at `start` (kMemWriter's is running); pids
  // not set are absent.
  void SetProcess(uint64_t pid, uint64_t start);
  // What FreeBytes says for every path that exists (default: UINT64_MAX).
  void SetFreeBytes(uint64_t bytes);

  // Contract breaches seen so far, one line each.
  std::vector<std::string> violations() const;

  // Env.
  Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) override;
  Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) override;
  std::vector<std::string> TakeRemovedTempFiles() override;
  Result<std::unique_ptr<Sink>> StdoutSink() override;
  bool FileExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Result<uint64_t> FreeBytes(const std::string& path) override;
  // {0, FileId(path)} for a file; folders get ids of their own.
  Result<zerofold::FileId> GetFileId(const std::string& path) override;

  // "a//b/" -> "a/b", "./a" -> "a", "" -> ".".
  static std::string Normalize(const std::string& path);
  // The folder holding path: "a/b" -> "a", "b" -> ".", "/b" -> "/".
  static std::string Parent(const std::string& path);

 private:
  using Bytes = std::shared_ptr<std::vector<std::byte>>;
  struct File {
    Bytes bytes;
    uint64_t id = 0;
  };
  class Source;
  class Stream;
  class AtomicSink;
  class StdoutSinkImpl;

  // REQUIRES: mu_ held.
  bool DirExistsLocked(const std::string& norm) const;
  void CreateDirsLocked(const std::string& norm);
  void PutLocked(const std::string& norm, Bytes bytes);

  void Violation(std::string what);
  // For sinks: rename temp onto target (kNotFound if its folder vanished).
  Status Rename(const std::string& temp, const std::string& target);
  void Remove(const std::string& temp);

  mutable std::mutex mu_;
  std::map<std::string, File> files_;
  std::set<std::string> dirs_;
  std::map<std::string, uint64_t> dir_ids_;  // given out by GetFileId
  uint64_t free_bytes_ = UINT64_MAX;
  uint64_t next_id_ = 1;
  uint64_t next_temp_ = 1;
  std::map<uint64_t, uint64_t> processes_ = {{kMemWriter.pid, kMemWriter.start}};
  std::set<std::string> swept_;
  std::vector<std::string> removed_;
  std::vector<std::byte> stdin_;
  std::vector<std::byte> stdout_;
  std::vector<std::string> violations_;
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_MEM_ENV_H_
