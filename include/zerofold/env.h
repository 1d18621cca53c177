// The I/O seam. Only src/io/posix_env.cc touches the operating system; tests
// replace it with MemEnv (src/io/mem_env.h) or wrap it in FaultEnv.
//
// Sources come in two shapes, and each reader says which it needs:
//   RandomSource  positional reads; const and thread-safe (files via pread;
//                 Env::Default() keeps at most half the soft limit on open
//                 files open, reopening the others when read).
//   StreamSource  forward-only reads (pipes, stdin, zstd streams).
// Sinks commit explicitly: an AtomicFileSink destroyed without Commit()
// removes its temp file and leaves the target untouched.
#ifndef ZEROFOLD_ENV_H_
#define ZEROFOLD_ENV_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zerofold/result.h"
#include "zerofold/status.h"

namespace zerofold {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // Reads up to dst.size() bytes at offset. Returns the count read, which is
  // short only at end of file (0 at or past the end). Thread-safe.
  virtual Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const = 0;
  // A hint that [offset, offset + length) will be read soon: a file starts
  // reading it into the operating system's cache in the background
  // (POSIX: posix_fadvise WILLNEED). Never fails and changes no result;
  // sources that cannot read ahead ignore it. Thread-safe.
  virtual void WillNeed(uint64_t offset, uint64_t length) const {
    (void)offset;
    (void)length;
  }
  // Total size in bytes, fixed for the source's lifetime.
  virtual uint64_t size() const = 0;
  // The name used in error messages (the path the user gave).
  virtual const std::string& name() const = 0;
};

// Reads exactly dst.size() bytes at offset; a short read is kCorrupt
// ("truncated") at the offset where the data ran out.
Status ReadExactAt(const RandomSource& src, uint64_t offset, std::span<std::byte> dst);

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // Reads up to dst.size() bytes; returns 0 only at end of stream.
  virtual Result<size_t> Read(std::span<std::byte> dst) = 0;
  // Discards n bytes; kCorrupt if the stream ends first.
  virtual Status Skip(uint64_t n);
  // Bytes consumed so far (the offset of the next byte).
  virtual uint64_t position() const = 0;
  virtual const std::string& name() const = 0;
};

// Reads exactly dst.size() bytes; a short read is kCorrupt ("truncated").
Status ReadExact(StreamSource& src, std::span<std::byte> dst);

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status Append(std::span<const std::byte> data) = 0;
  virtual Status Flush() { return Status::OK(); }
  // Bytes appended so far.
  virtual uint64_t position() const = 0;
  virtual const std::string& name() const = 0;
};

// Writes into a temp file in the target's folder. Commit() flushes, fsyncs,
// renames onto the target and fsyncs the folder. Destroying the sink without
// a successful Commit() removes the temp file; the target is untouched.
//
// The file as the file system shows it (Env::Default()):
//   - A new file gets mode 0666 less the umask (as `touch` makes it).
//   - A regular file replaced keeps its permission bits (set-ID and sticky
//     bits too), and its owner and group where the process may set them:
//     the owner needs privilege (EPERM leaves it the writer's), the group
//     membership. Best effort, as `cp -p`: ACLs and extended attributes are
//     not carried over, and a file system that cannot set them fails no
//     write. Other hard links to the old file keep the old bytes.
//   - A target that is a symlink, or a chain of them, is written through:
//     the temp file goes in the final target's folder and is renamed onto
//     that file, so the link, and every other link to the same file, stays
//     a link and sees the new bytes. In a Hugging Face hub cache
//     (snapshots/REV/FILE -> ../../blobs/HASH) a file rewritten in place
//     replaces its blob, and the cache never grows by a copy. A dangling
//     link creates its target; a loop of links is kIO. name() is still
//     the path given.
class AtomicFileSink : public Sink {
 public:
  // The file is complete: nothing more is appended. Writes out and syncs
  // what the sink holds and lets go of what it needs only for appending
  // (POSIX: the descriptor), so that many complete files can wait for
  // their commit. OpenWritten() and Commit() work as before it.
  virtual Status Close() { return Flush(); }
  virtual Status Commit() = 0;
  // Writes out what the sink holds and reads back everything appended,
  // before Commit(), so that a check of the output can fail with the target
  // still untouched. Append nothing while the source is in use. The
  // source's name() is the target's path.
  virtual Result<std::unique_ptr<RandomSource>> OpenWritten() = 0;
};

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

// The identity of a file or folder: two paths name the same one (spelled
// differently, "./x", through a symlink or a hard link) exactly when their
// FileIds are equal. POSIX: st_dev and st_ino.
struct FileId {
  uint64_t device = 0;
  uint64_t inode = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX environment. Never deleted.
  static Env* Default();

  virtual Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) = 0;
  // "-" is standard input.
  virtual Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) = 0;
  // The temp file is named for the writing process (src/io/temp_name.h),
  // in the folder of the file replaced (through symlinks: the final
  // target's; see AtomicFileSink). Before the first temp file in a folder,
  // the folder is swept: temp files of zerofold writers that are gone
  // (killed) are removed, those of live writers and every other file left
  // alone (best effort: a failed sweep never fails the write).
  virtual Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) = 0;
  // The paths the sweeps removed since the last call.
  virtual std::vector<std::string> TakeRemovedTempFiles() { return {}; }
  // Standard output as a sink (never committed, never removed). It may hold
  // bytes back (POSIX: up to 8 MiB when standard output is a regular file);
  // Flush() writes them and must end every use.
  virtual Result<std::unique_ptr<Sink>> StdoutSink() = 0;

  virtual bool FileExists(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Result<std::vector<DirEntry>> ListDir(const std::string& path) = 0;
  // Creates the folder and its parents; OK if it exists. New folders get
  // mode 0777 less the umask (as `mkdir -p` makes them).
  virtual Status CreateDirs(const std::string& path) = 0;
  // Reads a whole small file (index.json, `latest`); kLimit above max_bytes.
  virtual Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes an empty folder; kIO if it holds anything.
  virtual Status RemoveDir(const std::string& path) = 0;
  // Bytes this user may still write on the file system holding the existing
  // file or folder `path`, symlinks followed (POSIX: statvfs f_bavail x
  // f_frsize).
  virtual Result<uint64_t> FreeBytes(const std::string& path) = 0;
  // The identity of the file or folder at path, following symlinks.
  // kNotFound if there is nothing at path.
  virtual Result<FileId> GetFileId(const std::string& path) = 0;
};

// Whether a and b name the same existing file or folder (Env::GetFileId);
// false when either does not exist. Other errors (a folder that cannot be
// searched) are returned.
Result<bool> SameFile(Env* env, const std::string& a, const std::string& b);

}  // namespace zerofold

#endif  // ZEROFOLD_ENV_H_
