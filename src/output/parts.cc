#include "output/parts.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "output/sharding.h"

namespace zerofold::output {

namespace {

bool ParseUint(std::string_view s, uint32_t* v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<PartSpec> ParsePart(const std::string& text) {
  PartSpec spec;
  if (text == "finish") {
    spec.kind = PartSpec::Kind::kFinish;
    return spec;
  }
  size_t slash = text.find('/');
  std::string_view s(text);
  if (slash == std::string::npos || !ParseUint(s.substr(0, slash), &spec.index) ||
      !ParseUint(s.substr(slash + 1), &spec.count))
    return Status::InvalidArgument("--part takes I/N (I from 0 to N-1) or finish, not '" + text + "'");
  if (spec.count == 0) return Status::InvalidArgument("--part I/N needs N >= 1, not '" + text + "'");
  if (spec.index >= spec.count)
    return Status::InvalidArgument("--part I/N counts I from 0 to N-1 (as SLURM_ARRAY_TASK_ID with --array=0-" +
                                   std::to_string(spec.count - 1) + "), not '" + text + "'");
  spec.kind = PartSpec::Kind::kPart;
  return spec;
}

std::vector<uint32_t> AssignParts(const std::vector<uint64_t>& file_bytes, uint32_t parts) {
  std::vector<size_t> order(file_bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return file_bytes[a] > file_bytes[b]; });
  std::vector<uint64_t> load(std::max<uint32_t>(parts, 1), 0);
  std::vector<uint32_t> part_of(file_bytes.size(), 0);
  for (size_t f : order) {
    uint32_t least = 0;
    for (uint32_t p = 1; p < load.size(); ++p)
      if (load[p] < load[least]) least = p;
    part_of[f] = least;
    load[least] += file_bytes[f];
  }
  return part_of;
}

Result<bool> FileComplete(Env* env, const std::string& path, uint64_t planned_bytes) {
  if (!env->FileExists(path)) return false;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> file, env->OpenRandom(path));
  if (file->size() != planned_bytes)
    return Status::InvalidArgument("exists with " + std::to_string(file->size()) + " bytes, not the " +
                                   std::to_string(planned_bytes) +
                                   " this plan gives it (a file of another save, or of other flags); rerun "
                                   "this part with --force to rewrite its files")
        .WithPath(path);
  return true;
}

namespace {

// A weights file (a single file, shard or index of either format) in the
// folder of paths[0] that is none of `paths`: another plan's; "" if none.
std::string UnplannedWeights(Env* env, const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  const std::string folder = paths[0].substr(0, paths[0].rfind('/') == std::string::npos ? 0 : paths[0].rfind('/'));
  Result<std::vector<DirEntry>> entries = env->ListDir(folder.empty() ? "." : folder);
  if (!entries.ok()) return "";
  std::sort(entries->begin(), entries->end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : *entries) {
    const std::string path = folder.empty() ? e.name : folder + "/" + e.name;
    if (e.is_dir || std::find(paths.begin(), paths.end(), path) != paths.end()) continue;
    if (IsSavedWeightsName(e.name, ShardFormat::kTorch) || IsSavedWeightsName(e.name, ShardFormat::kSafetensors))
      return e.name;
  }
  return "";
}

}  // namespace

Status CheckPartsComplete(Env* env, const std::vector<std::string>& paths, const std::vector<uint64_t>& bytes) {
  for (size_t k = 0; k < paths.size(); ++k) {
    if (!env->FileExists(paths[k])) {
      if (std::string other = UnplannedWeights(env, paths); !other.empty())
        return Status::InvalidArgument("is missing, and the folder holds " + other +
                                       ", which this plan does not write: planned with other flags? run finish "
                                       "with the flags of the parts")
            .WithPath(paths[k]);
      return Status::Corrupt("is missing: the part that writes it has not finished; rerun that part").WithPath(paths[k]);
    }
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> file, env->OpenRandom(paths[k]));
    // The parts wrote every file whole (atomically): another size is
    // another plan, most often other flags given to finish than to the parts.
    if (file->size() != bytes[k])
      return Status::InvalidArgument("exists with " + std::to_string(file->size()) + " bytes, not the " +
                                     std::to_string(bytes[k]) +
                                     " this plan gives it: planned with other flags? run finish with the flags of "
                                     "the parts (or rerun the part that writes it with --force)")
          .WithPath(paths[k]);
  }
  return Status::OK();
}

Status SelectPartFiles(Env* env, const PartSpec& part, bool force, bool dry_run, PartFiles& files) {
  const size_t n = files.paths.size();
  files.write.assign(n, part.kind == PartSpec::Kind::kAll);
  files.skipped.clear();
  files.file_parts.clear();
  if (part.kind == PartSpec::Kind::kFinish) return dry_run ? Status::OK() : CheckPartsComplete(env, files.paths, files.bytes);
  if (part.kind != PartSpec::Kind::kPart) return Status::OK();
  files.file_parts = AssignParts(files.bytes, part.count);
  for (size_t k = 0; k < n; ++k) {
    if (files.file_parts[k] != part.index) continue;
    bool complete = false;
    if (!force) {
      ZF_ASSIGN_OR_RETURN(complete, FileComplete(env, files.paths[k], files.bytes[k]));
    }
    files.write[k] = !complete;
    if (complete) files.skipped.push_back(files.paths[k]);
  }
  return Status::OK();
}

bool VerifiesFile(const PartSpec& part, const PartFiles& files, size_t k) {
  return part.kind != PartSpec::Kind::kPart || files.file_parts[k] == part.index;
}

}  // namespace zerofold::output
