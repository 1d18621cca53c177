#include "output/file_set.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "output/target.h"

namespace zerofold::output {

namespace {

// Step 2 for a run that writes one file (OUT a file or a stream) or
// replaces its inputs in place.
Status CheckFileTargets(Env* env, const FileSet& set, const FileSetOptions& options) {
  if (set.in_place) {
    if (options.dry_run) return Status::OK();
    // One file at a time: each replacement must fit beside the file it
    // replaces (a symlinked file's target may be on another file system,
    // as in a Hugging Face cache's blobs/). A file left as it is needs none.
    for (const PlannedFile& f : set.files)
      if (f.write) ZF_TRY(CheckFreeSpace(env, f.path, f.bytes));
    return Status::OK();
  }
  if (io::IsStreamName(set.out)) return Status::OK();  // standard output and .zst take what they take
  ZF_TRY(CheckTargets(env, set.inputs, {{set.out}, {}}, options.dry_run || options.force));
  if (options.dry_run) return Status::OK();
  return CheckFreeSpace(env, set.out, set.files.front().bytes);
}

}  // namespace

Result<FileSetReport> WriteFileSet(Env* env, FileSet& set, const FileSetOptions& options) {
  const PartSpec& part = options.part;
  if (part.kind != PartSpec::Kind::kAll && !set.folder)
    return Status::InvalidArgument("--part needs a folder OUT (a file OUT is one file, written by one run)")
        .WithPath(set.out);
  FileSetReport report;
  PartFiles& files = report.parts;
  for (const PlannedFile& f : set.files) {
    files.paths.push_back(f.path);
    files.bytes.push_back(f.bytes);
  }
  ZF_TRY(SelectPartFiles(env, part, options.force, options.dry_run, files));

  // Step 2: the targets.
  std::vector<bool> tail_in_place;
  const bool tail_applies = set.folder && !set.in_place;
  if (tail_applies) {
    std::vector<std::string> planned = files.paths;
    if (!set.tail.index.empty()) planned.push_back(set.tail.index);
    ZF_ASSIGN_OR_RETURN(set.tail.stale, EarlierSave(env, set.out, set.format, planned));
    ZF_TRY(CheckFolderOutput(env, set.out, set.inputs, part, files, set.tail, options.force, options.dry_run,
                             &tail_in_place));
  } else {
    ZF_TRY(CheckFileTargets(env, set, options));
  }

  // Step 3: the read plan.
  if (options.read_plan != nullptr) {
    for (size_t k = 0; k < set.files.size(); ++k)
      if (files.write[k]) options.read_plan->Append(set.files[k].reads);
    if (tail_applies) ZF_TRY(AddTailReads(env, set.tail, part, options.read_plan));
  }
  report.stored_bytes = files.bytes;
  auto mine = [&](size_t k) { return part.kind != PartSpec::Kind::kPart || files.file_parts[k] == part.index; };
  if (options.dry_run) {
    if (options.file_done)
      for (size_t k = 0; k < set.files.size(); ++k)
        if (mine(k)) options.file_done(k, !files.write[k]);
    return report;
  }

  // Step 4: the files.
  if (set.prepare) ZF_TRY(set.prepare());
  OutputRollback rollback(env);
  if (tail_applies && part.kind != PartSpec::Kind::kFinish) ZF_TRY(rollback.CreateDirs(set.out));
  SetProgress progress;
  for (size_t k = 0; k < set.files.size(); ++k) {
    if (!files.write[k]) continue;
    progress.files++;
    progress.total += set.files[k].payload;
  }
  WroteBytes wrote = [&](uint64_t n) {
    progress.done += n;
    if (options.progress) options.progress(progress);
  };
  // A file this run writes has an output until its commit; the others are
  // complete already: a part's own found complete (finish: every file), or
  // in place unchanged (no write callback).
  std::vector<std::unique_ptr<io::NamedOutput>> outputs(set.files.size());
  auto write_file = [&](size_t k) -> Status {
    const PlannedFile& f = set.files[k];
    if (!files.write[k] || f.write == nullptr) return Status::OK();
    ZF_ASSIGN_OR_RETURN(outputs[k], io::OpenNamedOutput(env, f.path, options.zstd));
    Status written = f.write(*outputs[k]->sink(), wrote);
    // A file's writer stops (and frees its buffers and descriptor) before
    // the next starts: many complete files may wait for their commit.
    if (written.ok()) written = outputs[k]->Close();
    progress.file++;
    return written.WithPath(f.path);
  };
  // --verify's progress: the payload of the files checked.
  auto checks = [&](size_t k) { return options.verify && set.files[k].verify != nullptr && mine(k); };
  SetProgress verifying;
  verifying.verifying = true;
  for (size_t k = 0; k < set.files.size(); ++k) {
    if (!checks(k)) continue;
    verifying.files++;
    verifying.total += set.files[k].payload;
  }
  uint64_t verified = 0;  // the payload of the files checked before this one
  WroteBytes checked_bytes = [&](uint64_t n) {
    verifying.done = std::min(verifying.total, verifying.done + n);
    if (options.progress) options.progress(verifying);
  };
  auto check_file = [&](size_t k) -> Status {
    const PlannedFile& f = set.files[k];
    if (!checks(k)) return Status::OK();
    Status checked;
    if (outputs[k] == nullptr) {
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> found, env->OpenRandom(f.path));
      checked = f.verify(*found, checked_bytes);
    } else {
      Result<std::unique_ptr<RandomSource>> back = outputs[k]->OpenWritten();
      checked = back.ok() ? f.verify(**back, checked_bytes) : back.status();
    }
    ZF_TRY(checked.WithPath(f.path));
    verifying.done = verified += f.payload;  // what the callback reported, made exact
    verifying.file++;
    if (options.progress) options.progress(verifying);
    return Status::OK();
  };
  auto commit_file = [&](size_t k) -> Status {
    const PlannedFile& f = set.files[k];
    if (outputs[k] == nullptr) return Status::OK();
    ZF_TRY(outputs[k]->Commit().WithPath(f.path));
    report.stored_bytes[k] = outputs[k]->stored_bytes();
    outputs[k].reset();
    if (part.kind == PartSpec::Kind::kAll && !set.in_place && f.path != io::kStdioName) rollback.Committed(f.path);
    return Status::OK();
  };
  auto done_file = [&](size_t k) {
    if (options.file_done && mine(k)) options.file_done(k, !files.write[k]);
  };
  // Each file written and checked in turn (and reported done). In place it
  // replaces its input at once (the disk holds one replacement at a time);
  // otherwise none is committed before all are, so a failure leaves the
  // targets (an earlier save under --force) as they were.
  for (size_t k = 0; k < set.files.size(); ++k) {
    ZF_TRY(write_file(k));
    ZF_TRY(check_file(k));
    if (set.in_place) ZF_TRY(commit_file(k));
    done_file(k);
  }
  for (size_t k = 0; k < set.files.size(); ++k) ZF_TRY(commit_file(k));  // in place: none left

  // Step 5: the tail.
  if (tail_applies && part.kind != PartSpec::Kind::kPart) {
    ZF_TRY(WriteTail(env, set.out, set.tail, tail_in_place, options.buffer_bytes, &rollback, &report.copied,
                     &report.removed));
  } else if (set.in_place && !set.tail.index.empty()) {
    ZF_TRY(WriteSmallFile(env, set.tail.index, set.tail.index_text));
  }
  rollback.Keep();
  return report;
}

}  // namespace zerofold::output
