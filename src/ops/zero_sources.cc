#include "ops/zero_sources.h"

#include <algorithm>
#include <utility>

#include "io/checked_math.h"
#include "zero/extract.h"
#include "zero/link.h"

namespace zerofold::ops {

namespace {

constexpr const char* kFp32File = "fp32.pt";

std::string Join(const std::string& folder, const std::string& name) {
  return folder.empty() || folder.back() == '/' ? folder + name : folder + "/" + name;
}

// Values of the model-states file, read through its storage locations.
class ModelFileReader : public zero::ElementReader {
 public:
  explicit ModelFileReader(const ZeroFile& file) : file_(file) {}

  Status Read(const zero::TensorMeta& t, uint64_t first, std::span<std::byte> out) override {
    auto it = file_.storages.find(t.storage);
    if (it == file_.storages.end()) {
      return Status::Corrupt("no storage " + t.storage + " in the file").WithPath(file_.path);
    }
    const uint32_t size = torch::Info(t.dtype).itemsize;
    std::optional<uint64_t> element = io::CheckedAdd<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(t.storage_offset, 0)), first);
    std::optional<uint64_t> begin = element ? io::CheckedMul<uint64_t>(*element, size) : std::nullopt;
    if (t.storage_offset < 0 || !begin || !io::RangeInside(*begin, out.size(), it->second.nbytes)) {
      return Status::Corrupt("reading past the end of storage " + t.storage)
          .WithPath(file_.path)
          .WithRecord(it->second.record);
    }
    Status s = ReadExactAt(*file_.source, it->second.data_offset + *begin, out);
    return s.ok() ? s : s.WithPath(file_.path);
  }

 private:
  const ZeroFile& file_;
};

}  // namespace

bool IsUniversalTagFolder(Env* env, const std::string& tag_folder) {
  return env->IsDirectory(Join(tag_folder, kUniversalZeroFolder));
}

Status LoadUniversalParams(Env* env, const torch::ReadOptions& read, LoadedZero* out) {
  const std::string zero_dir = Join(out->tag_folder, kUniversalZeroFolder);
  ZF_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, env->ListDir(zero_dir));
  std::vector<std::string> names;
  for (const DirEntry& e : entries)
    if (e.is_dir) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  zero::ZeroCheckpoint& d = out->description;
  d.universal = true;
  if (!out->description.model_states.empty() && out->model_files.size() > 1) d.universal_stage = 3;
  for (const std::string& name : names) {
    const std::string path = Join(Join(zero_dir, name), kFp32File);
    if (!env->FileExists(path)) {
      return Status::NotFound("param folder without fp32.pt: not a universal checkpoint's zero/<param>/")
          .WithPath(Join(zero_dir, name));
    }
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
    Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(*src, read);
    if (!ckpt.ok()) return Status(ckpt.status()).WithPath(path);
    if (ckpt->big_endian)
      return Status::Unsupported("byteorder record says big-endian; merge reads little-endian data only").WithPath(path);
    const uint32_t index = static_cast<uint32_t>(out->param_files.size());
    ZF_ASSIGN_OR_RETURN(zero::UniversalParam u, zero::ExtractUniversalParam(*ckpt, path, name, index));
    d.universal_params.push_back(std::move(u));
    d.param_files.push_back(path);
    ZeroFile f;
    f.path = path;
    f.source = std::move(src);
    for (const torch::Storage& s : ckpt->storages) f.storages.emplace(s.key, StorageLocation{s.data_offset, s.nbytes, s.record});
    out->param_files.push_back(std::move(f));
  }
  return Status::OK();
}

Result<std::vector<std::string>> LinkZero0(LoadedZero* out, bool by_value) {
  zero::ZeroCheckpoint& d = out->description;
  if (!d.optim_states.empty() || d.universal || d.model_states.empty()) return std::vector<std::string>{};
  const zero::ModelStates& m = d.model_states[0];
  if (m.optimizer_kind != zero::Zero0Optimizer::kFp16Fused && m.optimizer_kind != zero::Zero0Optimizer::kFp16Unfused)
    return std::vector<std::string>{};
  ModelFileReader reader(out->model_files[0]);
  ZF_ASSIGN_OR_RETURN(zero::Zero0Link link, zero::LinkZero0Masters(m, by_value ? &reader : nullptr));
  d.zero0_masters = std::move(link.masters);
  return std::move(link.by_value);
}

}  // namespace zerofold::ops
