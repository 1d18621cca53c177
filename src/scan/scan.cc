#include "scan/scan.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "model/hf_folder.h"
#include "scan/duplicates.h"
#include "scan/folders.h"
#include "scan/judge.h"

namespace zerofold::scan {

namespace {

// One scan's state: the totals, the hashes, the folders walked.
class Scanner {
 public:
  Scanner(Env* env, const ScanOptions& options, const std::function<Status(const FileResult&)>& on_file)
      : env_(env), options_(options), on_file_(on_file) {}

  // Adds the sizes of the files under `path` to the progress total.
  void Count(const std::string& path) {
    if (env_->IsDirectory(path)) {
      if (Result<FileId> id = env_->GetFileId(path); id.ok() && !counted_.insert({id->device, id->inode}).second)
        return;
      Result<std::vector<DirEntry>> listed = env_->ListDir(path);
      if (!listed.ok()) return;
      for (const DirEntry& e : *listed) Count(model::JoinPath(path, e.name));
      return;
    }
    if (Result<std::unique_ptr<RandomSource>> f = env_->OpenRandom(path); f.ok()) total_bytes_ += (*f)->size();
  }

  Status Path(const std::string& path) {
    if (env_->IsDirectory(path)) return Folder(path);
    if (!env_->FileExists(path)) {
      FileResult r;
      r.path = path;
      r.verdict = Verdict::kUnreadable;
      r.error = Status::NotFound("no such file or folder").WithPath(path);
      return Emit(std::move(r));
    }
    Progress(path, 0);
    return Emit(JudgeFile(env_, path, options_, &dups_, Hashing(path)));
  }

  Totals Finish() {
    totals_.duplicates = dups_.Groups(&totals_.duplicate_wasted_bytes);
    totals_.hashed = options_.hash;
    return std::move(totals_);
  }

 private:
  // Walks `dir`: its entries in name order, files judged, folders walked.
  Status Folder(const std::string& dir) {
    if (Result<FileId> id = env_->GetFileId(dir); id.ok()) {
      if (!walked_.insert({id->device, id->inode}).second) return Status::OK();
    }
    Result<std::vector<DirEntry>> listed = env_->ListDir(dir);
    if (!listed.ok()) {
      FileResult r;
      r.path = dir;
      r.verdict = VerdictOf(listed.status());
      r.error = listed.status();
      r.error.WithPath(dir);
      return Emit(std::move(r));
    }
    std::vector<DirEntry> entries = std::move(listed).value();
    std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    Progress(dir, 0);
    // Files judged as a folder's: DCP data and .metadata, index files.
    std::map<std::string, FileResult> judged = JudgeDcpFolder(env_, dir, options_, &dups_, Hashing(dir));
    judged.merge(JudgeHfIndexes(env_, dir, options_));
    const std::optional<std::pair<std::string, Status>> folder_error =
        DeepSpeedFolderError(env_, dir, entries, options_);
    auto with_folder_error = [&](FileResult r, const std::string& name) {
      if (folder_error && folder_error->first == name) return WithFolderError(std::move(r), folder_error->second);
      return r;
    };
    for (const DirEntry& e : entries) {
      const std::string path = model::JoinPath(dir, e.name);
      if (e.is_dir) {
        ZF_TRY(Folder(path));
        continue;
      }
      if (auto at = judged.find(e.name); at != judged.end()) {
        ZF_TRY(Emit(with_folder_error(std::move(at->second), e.name)));
        continue;
      }
      Progress(path, 0);
      ZF_TRY(Emit(with_folder_error(JudgeFile(env_, path, options_, &dups_, Hashing(path)), e.name)));
    }
    return Status::OK();
  }

  // Counts `r` and hands it on; kCancelled when the Env was stopped.
  Status Emit(FileResult r) {
    if (r.error.code() == Code::kCancelled) return r.error;
    ++totals_.files;
    ++totals_.by_verdict[static_cast<size_t>(r.verdict)];
    totals_.file_bytes += r.file_bytes;
    // A refused file's byte counts are what its damaged records declare
    // (a chunk "of 4 EiB"): the totals add up only files read whole.
    if (r.verdict == Verdict::kSafe || r.verdict == Verdict::kUnsafe) {
      totals_.stored_bytes += r.stored_bytes;
      totals_.referenced_bytes += r.referenced_bytes;
      totals_.shrink_saves += r.shrink_saves.value_or(0);
      totals_.optimizer_bytes += r.optimizer_bytes;
    }
    if (totals_.first_error.ok()) totals_.first_error = ResultStatus(r);
    done_bytes_ += r.file_bytes;
    if (on_file_) ZF_TRY(on_file_(r));
    Progress(r.path, 0);
    return Status::OK();
  }

  void Progress(const std::string& path, uint64_t hashed) {
    if (options_.progress) options_.progress(path, done_bytes_ + hashed, std::max(total_bytes_, done_bytes_ + hashed));
  }

  HashProgress Hashing(const std::string& path) {
    if (!options_.progress) return {};
    return [this, path](uint64_t hashed) { Progress(path, hashed); };
  }

  Env* env_;
  const ScanOptions& options_;
  const std::function<Status(const FileResult&)>& on_file_;
  Totals totals_;
  DuplicateIndex dups_;
  std::set<std::pair<uint64_t, uint64_t>> walked_, counted_;
  uint64_t done_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace

Result<Totals> Scan(Env* env, const std::vector<std::string>& paths, const ScanOptions& options,
                    const std::function<Status(const FileResult&)>& on_file) {
  Scanner scanner(env, options, on_file);
  if (options.progress)
    for (const std::string& path : paths) scanner.Count(path);
  for (const std::string& path : paths) ZF_TRY(scanner.Path(path));
  return scanner.Finish();
}

}  // namespace zerofold::scan
