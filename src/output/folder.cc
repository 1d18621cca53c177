#include "output/folder.h"

#include <algorithm>
#include <cstring>
#include <cctype>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "model/hf_folder.h"

namespace zerofold::output {

std::string IndexText(const std::string& path, uint64_t total_size,
                      std::vector<std::pair<std::string, std::string>> weight_map) {
  std::sort(weight_map.begin(), weight_map.end());  // sort_keys=True; bytewise is code point order in UTF-8
  model::ShardIndex index;
  index.path = path;
  index.total_size = total_size;
  index.weight_map = std::move(weight_map);
  return model::FormatShardIndex(index);
}

Result<std::vector<std::string>> EarlierSave(Env* env, const std::string& folder, ShardFormat format,
                                             const std::vector<std::string>& written) {
  std::vector<std::string> paths;
  if (!env->IsDirectory(folder)) return paths;
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(folder));
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  std::set<std::string> names;
  for (const std::string& w : written) names.insert(w.substr(w.rfind('/') + 1));
  for (const DirEntry& e : entries)
    if (!e.is_dir && IsSavedWeightsName(e.name, format) && !names.count(e.name))
      paths.push_back(model::JoinPath(folder, e.name));
  return paths;
}

Result<std::vector<std::string>> OtherFileNames(Env* env, const std::string& input,
                                                const std::set<std::string>& handled) {
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(input));
  std::vector<std::string> names;
  for (const DirEntry& e : entries)
    if (!e.is_dir && !handled.count(e.name) && e.name.rfind(".", 0) != 0) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<std::string>> ModelFileNames(Env* env, const std::string& input) {
  static const std::set<std::string> kModelFiles = {
      "config.json",           "generation_config.json",  "tokenizer.json",  "tokenizer_config.json",
      "special_tokens_map.json", "added_tokens.json",     "vocab.json",      "vocab.txt",
      "merges.txt",            "tokenizer.model",         "spiece.model",    "sentencepiece.bpe.model",
      "chat_template.jinja",   "chat_template.json",      "preprocessor_config.json", "processor_config.json"};
  // The modules of a model with custom code (config.json's auto_map,
  // loaded with trust_remote_code: DeepSeek-V3, Kimi-K2), and tiktoken
  // vocabularies (Kimi's tiktoken.model, Qwen's qwen.tiktoken).
  static const std::string_view kCodePrefixes[] = {"configuration_", "modeling_", "tokenization_",
                                                   "processing_", "image_processing_", "feature_extraction_"};
  auto custom = [](std::string_view name) {
    if (name.ends_with(".tiktoken") || name == "tiktoken.model") return true;
    if (!name.ends_with(".py")) return false;
    for (std::string_view prefix : kCodePrefixes)
      if (name.starts_with(prefix)) return true;
    return false;
  };
  std::vector<std::string> names;
  if (!env->IsDirectory(input)) return names;
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> all, OtherFileNames(env, input, {}));
  for (const std::string& name : all)
    if (kModelFiles.count(name) || custom(name)) names.push_back(name);
  return names;
}

std::vector<std::string> TailPaths(const std::string& out, const FolderTail& tail) {
  std::vector<std::string> paths;
  for (const std::string& name : tail.copies) paths.push_back(model::JoinPath(out, name));
  if (!tail.index.empty()) paths.push_back(tail.index);
  return paths;
}

Result<uint64_t> TailBytes(Env* env, const FolderTail& tail) {
  uint64_t bytes = tail.index_text.size();
  for (const std::string& name : tail.copies) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(model::JoinPath(tail.copy_from, name)));
    bytes += src->size();
  }
  return bytes;
}

Status AddTailReads(Env* env, const FolderTail& tail, const PartSpec& part, io::ReadPlan* plan) {
  if (part.kind == PartSpec::Kind::kPart) return Status::OK();
  for (const std::string& name : tail.copies) {
    const std::string path = model::JoinPath(tail.copy_from, name);
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
    plan->Add(path, 0, src->size());
  }
  return Status::OK();
}

namespace {

// Whether the file at `path` holds exactly the bytes of `want`.
Result<bool> HoldsBytes(Env* env, const std::string& path, const RandomSource& want) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> have, env->OpenRandom(path));
  if (have->size() != want.size()) return false;
  std::vector<std::byte> a(1 << 16), b(1 << 16);
  for (uint64_t pos = 0; pos < want.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(a.size(), want.size() - pos));
    ZF_TRY(ReadExactAt(*have, pos, std::span<std::byte>(a.data(), n)));
    ZF_TRY(ReadExactAt(want, pos, std::span<std::byte>(b.data(), n)));
    if (!std::equal(a.begin(), a.begin() + n, b.begin())) return false;
    pos += n;
  }
  return true;
}

// A RandomSource over a string (the index text).
class TextSource final : public RandomSource {
 public:
  TextSource(const std::string& text, const std::string& name) : text_(text), name_(name) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= text_.size()) return size_t{0};
    const size_t n = std::min<size_t>(dst.size(), text_.size() - offset);
    std::memcpy(dst.data(), text_.data() + offset, n);
    return n;
  }
  uint64_t size() const override { return text_.size(); }
  const std::string& name() const override { return name_; }

 private:
  const std::string& text_;
  const std::string& name_;
};

}  // namespace

Result<std::vector<bool>> TailInPlace(Env* env, const std::string& out, const FolderTail& tail, bool force) {
  const std::vector<std::string> paths = TailPaths(out, tail);
  std::vector<bool> in_place(paths.size(), false);
  for (size_t k = 0; k < paths.size(); ++k) {
    if (!env->FileExists(paths[k])) continue;
    Result<bool> same = false;
    if (k < tail.copies.size()) {
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(model::JoinPath(tail.copy_from, tail.copies[k])));
      same = HoldsBytes(env, paths[k], *src);
    } else {
      same = HoldsBytes(env, paths[k], TextSource(tail.index_text, tail.index));
    }
    if (!same.ok()) return same.status();
    in_place[k] = *same;
    if (!*same && !force) return Status::InvalidArgument("exists; use --force to replace it").WithPath(paths[k]);
  }
  return in_place;
}

Status CheckFolderOutput(Env* env, const std::string& out, const std::vector<std::string>& inputs,
                         const PartSpec& part, const PartFiles& weights, const FolderTail& tail, bool force,
                         bool dry_run, std::vector<bool>* tail_in_place) {
  const std::vector<std::string> tail_paths = TailPaths(out, tail);
  TargetFiles files{weights.paths, tail.stale};
  files.written.insert(files.written.end(), tail_paths.begin(), tail_paths.end());
  // Parts and dry runs: against the inputs only (force stands for "exists").
  const bool one_run = part.kind == PartSpec::Kind::kAll && !dry_run;
  ZF_TRY(CheckTargets(env, inputs, files, one_run ? force : true));
  tail_in_place->assign(tail_paths.size(), false);
  if (dry_run) return Status::OK();
  if (!one_run && !force && !tail.stale.empty()) {
    return Status::InvalidArgument(
               "is part of an earlier save in the output folder, not of this plan; use --force (with every part "
               "and finish) to replace that save: --part finish then removes it")
        .WithPath(tail.stale.front());
  }
  uint64_t needed = 0;
  for (size_t k = 0; k < weights.paths.size(); ++k)
    if (weights.write[k]) needed += weights.bytes[k];
  if (part.kind != PartSpec::Kind::kPart) {
    if (part.kind == PartSpec::Kind::kFinish) {
      ZF_ASSIGN_OR_RETURN(*tail_in_place, TailInPlace(env, out, tail, force));
    }
    ZF_ASSIGN_OR_RETURN(uint64_t tail_bytes, TailBytes(env, tail));
    needed += tail_bytes;
  }
  return CheckFreeSpace(env, out, needed);
}

Status WriteTail(Env* env, const std::string& out, const FolderTail& tail, const std::vector<bool>& skip,
                 size_t buffer_bytes, OutputRollback* rollback, std::vector<std::string>* copied,
                 std::vector<std::string>* removed) {
  const std::vector<std::string> paths = TailPaths(out, tail);
  for (size_t k = 0; k < paths.size(); ++k) {
    if (k < skip.size() && skip[k]) continue;
    if (k < tail.copies.size()) {
      ZF_TRY(CopyFile(env, model::JoinPath(tail.copy_from, tail.copies[k]), paths[k], buffer_bytes));
      if (copied != nullptr) copied->push_back(tail.copies[k]);
    } else {
      ZF_TRY(WriteSmallFile(env, paths[k], tail.index_text));
    }
    if (rollback != nullptr) rollback->Committed(paths[k]);
  }
  for (const std::string& path : tail.stale) {
    ZF_TRY(env->RemoveFile(path));
    if (removed != nullptr) removed->push_back(path.substr(path.rfind('/') + 1));
  }
  return Status::OK();
}

Status CopyFile(Env* env, const std::string& from, const std::string& to, size_t buffer_bytes) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(from));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(to));
  std::vector<std::byte> buffer(std::min<uint64_t>(buffer_bytes, std::max<uint64_t>(src->size(), 1)));
  for (uint64_t pos = 0; pos < src->size();) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src->size() - pos));
    ZF_TRY(ReadExactAt(*src, pos, std::span<std::byte>(buffer.data(), n)));
    ZF_TRY(sink->Append(std::span<const std::byte>(buffer.data(), n)));
    pos += n;
  }
  return sink->Commit();
}

Status WriteSmallFile(Env* env, const std::string& path, const std::string& text) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(path));
  ZF_TRY(sink->Append(std::as_bytes(std::span<const char>(text.data(), text.size()))));
  return sink->Commit();
}

}  // namespace zerofold::output
