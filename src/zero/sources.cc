// zero/load.h: what a checkpoint needs beyond its rank files.
#include "zero/load.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>
#include <utility>

#include "io/checked_math.h"
#include "torch/read.h"
#include "torch/storage_source.h"
#include "zero/extract.h"
#include "zero/link.h"

namespace zerofold::zero {

namespace {

constexpr const char* kFp32File = "fp32.pt";
// engine.py save_checkpoint (v0.19.5): <tag>/offloaded_tensors/rank<NN>.
constexpr const char* kOffloadedTensorsFolder = "offloaded_tensors";

std::string Join(const std::string& folder, const std::string& name) {
  return folder.empty() || folder.back() == '/' ? folder + name : folder + "/" + name;
}

// Values of the model-states file, read through its storages' records
// (torch/storage_source.h: a deflated record is inflated).
class ModelFileReader : public zero::ElementReader {
 public:
  explicit ModelFileReader(const ZeroFile& file) : file_(file), records_(*file.source) {}

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
    Result<const RandomSource*> record = records_.For(it->second);
    Status s = record.ok() ? ReadExactAt(**record, *begin, out) : record.status();
    return s.ok() ? s : s.WithPath(file_.path);
  }

 private:
  const ZeroFile& file_;
  torch::StorageSources records_;
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
    const uint32_t index = static_cast<uint32_t>(out->param_files.size());
    ZF_ASSIGN_OR_RETURN(zero::UniversalParam u, zero::ExtractUniversalParam(*ckpt, path, name, index));
    d.universal_params.push_back(std::move(u));
    d.param_files.push_back(path);
    ZeroFile f;
    f.path = path;
    f.source = std::move(src);
    for (const torch::Storage& s : ckpt->storages) f.storages.emplace(s.key, s);
    out->param_files.push_back(std::move(f));
  }
  return Status::OK();
}

Status LoadOffloadedPartitions(Env* env, LoadedZero* out) {
  zero::ZeroCheckpoint& d = out->description;
  const uint64_t ws = d.optim_states.size();
  for (zero::OptimStates& o : d.optim_states) {
    if (o.zero_stage != 3) continue;
    bool empty = !o.fp32_groups.empty();
    for (const zero::TensorMeta& t : o.fp32_groups)
      empty = empty && std::any_of(t.shape.begin(), t.shape.end(), [](int64_t x) { return x == 0; });
    if (!empty) continue;
    char rank_dir[32];
    std::snprintf(rank_dir, sizeof rank_dir, "rank%02u", o.rank);
    const std::string folder = Join(Join(out->tag_folder, kOffloadedTensorsFolder), rank_dir);
    if (!env->IsDirectory(folder)) {
      return Status::NotFound("fp32_flat_groups are empty tensors (optimizer offloaded to NVMe): their data belongs in " +
                              folder + ", which is missing")
          .WithPath(o.file);
    }
    const zero::ModelStates& m = d.model_states[std::min<size_t>(o.rank, d.model_states.size() - 1)];
    if (m.param_shapes.size() != o.fp32_groups.size()) {
      return Status::Corrupt("param_shapes has " + std::to_string(m.param_shapes.size()) + " sub-groups, fp32_flat_groups " +
                             std::to_string(o.fp32_groups.size()))
          .WithPath(o.file);
    }
    // zero.Init numbers params (ds_id) in module order; a tie is its owner.
    std::vector<std::string> order;
    std::unordered_set<std::string> skip(m.buffer_names.begin(), m.buffer_names.end());
    if (m.shared_params)
      for (const zero::SharedParam& sp : *m.shared_params) skip.insert(sp.name);
    for (const zero::NamedTensor& t : m.module)
      if (!skip.count(t.name)) order.push_back(t.name);
    auto index_of = [&order](const std::string& name) -> int64_t {
      auto it = std::find(order.begin(), order.end(), name);
      return it == order.end() ? -1 : it - order.begin();
    };
    o.offloaded_file.assign(o.fp32_groups.size(), -1);
    for (size_t g = 0; g < o.fp32_groups.size(); ++g) {
      const std::vector<zero::NamedShape>& params = m.param_shapes[g];
      if (params.empty()) continue;
      int64_t a = index_of(params.front().name), b = index_of(params.back().name);
      uint64_t need = 0;
      for (const zero::NamedShape& p : params) {
        uint64_t n = 1;
        for (int64_t x : p.shape) n = io::CheckedMul<uint64_t>(n, static_cast<uint64_t>(std::max<int64_t>(x, 0))).value_or(UINT64_MAX / 2);
        need = io::CheckedAdd<uint64_t>(need, n / ws + (n % ws != 0)).value_or(UINT64_MAX / 2);
      }
      const std::string name = std::to_string(a) + "_" + std::to_string(b) + ".tensor.swp";
      const std::string path = Join(folder, name);
      if (a < 0 || b < 0 || !env->FileExists(path)) {
        return Status::NotFound("sub-group " + std::to_string(g) + " (" + params.front().name + " .. " +
                                params.back().name + ") was offloaded to NVMe, its file " + name + " is missing")
            .WithPath(folder);
      }
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
      const zero::TensorMeta empty = o.fp32_groups[g];
      const uint64_t itemsize = torch::Info(empty.dtype).itemsize;
      std::optional<uint64_t> bytes = io::CheckedMul<uint64_t>(need, itemsize);
      if (!bytes || src->size() < *bytes || need > (uint64_t{1} << 62)) {
        return Status::Corrupt("holds " + std::to_string(src->size()) + " bytes, sub-group " + std::to_string(g) +
                               " of rank " + std::to_string(o.rank) + " needs " + std::to_string(need) + " " +
                               std::string(torch::Info(empty.dtype).name) + " elements")
            .WithPath(path);
      }
      ZeroFile f;
      f.path = path;
      StorageLocation whole;  // the swap file is the storage's bytes, stored
      whole.key = "0";
      whole.nbytes = src->size();
      whole.record_size = src->size();
      whole.record = name;
      f.storages.emplace("0", whole);
      f.source = std::move(src);
      o.offloaded_file[g] = static_cast<int64_t>(out->param_files.size());
      o.fp32_groups[g] = zero::TensorMeta{empty.dtype, {static_cast<int64_t>(need)}, {1}, "0", 0};
      d.param_files.push_back(path);
      out->param_files.push_back(std::move(f));
    }
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

}  // namespace zerofold::zero
