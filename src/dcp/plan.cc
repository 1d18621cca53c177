#include "dcp/plan.h"
#include "torch/read.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "io/checked_math.h"
#include "io/range_source.h"
#include "io/zstd_stream.h"
#include "model/hf_folder.h"
#include "pickle/safety.h"
#include "torch/state_dict.h"
#include "torch/storage_source.h"
#include "torch/stream_checkpoint.h"

namespace zerofold::dcp {

namespace {

// torch 2.x _extension.py: ZStandard's descriptor.
constexpr std::string_view kZstdTransform = "stream.zstd/1";

std::string FirstComponent(const std::string& key) { return key.substr(0, key.find('.')); }

// An error of a reader of the chunk's archive, moved to the file: offsets
// inside the slice become file offsets (zstd: they count decompressed bytes
// and stay as they are).
Status InFile(Status s, uint64_t slice_offset, bool decompressed, const std::string& path, const std::string& key) {
  if (!decompressed && s.offset() != kNoOffset) s.SetOffset(s.offset() + slice_offset);
  std::string record = s.record().empty() ? key : key + ": " + s.record();
  return s.SetRecord(record).WithPath(path);
}

// The one tensor of a chunk's archive, checked against the metadata.
Result<const torch::Tensor*> ChunkTensor(const torch::Checkpoint& ckpt, const Entry& e, const Chunk& c) {
  if (ckpt.tensors.size() != 1 && ckpt.unsafe_globals.empty())
    return Status::Corrupt("the chunk's archive holds " + std::to_string(ckpt.tensors.size()) +
                           " tensors, not one");
  if (!ckpt.unsafe_globals.empty()) {
    return Status::Unsafe("the chunk's archive references unsafe globals: " + pickle::DescribeUnsafe(ckpt.unsafe_globals) +
                          " (not executed)");
  }
  const torch::Tensor& t = ckpt.tensors[0];
  if (t.dtype != e.dtype)
    return Status::Corrupt("the chunk's tensor is " + std::string(torch::Info(t.dtype).name) + ", the metadata says " +
                           std::string(torch::Info(e.dtype).name));
  if (t.shape != c.sizes)
    return Status::Corrupt("the chunk's tensor has shape " + torch::ShapeText(t.shape) + ", the metadata says " +
                           torch::ShapeText(c.sizes));
  return &t;
}

Status Locate(const RandomSource& file, const StorageItem& s, const Entry& e, const Chunk& c,
              const torch::ReadOptions& read, gather::Piece* p) {
  if (s.raw) {
    p->record = s.fqn;
    p->data_offset = s.offset_in_file;
    p->storage_nbytes = s.length;
    p->strides = torch::ContiguousStrides(c.sizes);
    if (gather::NumelOf(c.sizes) * torch::Info(e.dtype).itemsize != s.length)
      return Status::Corrupt("the chunk's " + std::to_string(s.length) + " bytes do not hold a " +
                             torch::ShapeText(c.sizes) + " " + std::string(torch::Info(e.dtype).name) + " tensor");
    return Status::OK();
  }
  if (s.transforms.empty()) {
    io::RangeSource range(file, s.offset_in_file, s.length);
    ZF_ASSIGN_OR_RETURN(torch::Checkpoint ckpt, torch::ReadCheckpoint(range, read));
    ZF_ASSIGN_OR_RETURN(const torch::Tensor* t, ChunkTensor(ckpt, e, c));
    gather::PlaceInStorage(ckpt.storages[t->storage], s.offset_in_file, p);
    p->view_offset = t->storage_offset;
    p->strides = t->stride;
    return Status::OK();
  }
  if (s.transforms.size() != 1 || s.transforms[0] != kZstdTransform) {
    std::string names;
    for (const std::string& d : s.transforms) names += (names.empty() ? "" : ", ") + d;
    return Status::Unsupported("transform " + names + " (only " + std::string(kZstdTransform) + " is read)");
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<io::ZstdSource> zstd,
                      io::ZstdSource::Open(std::make_unique<io::RangeStream>(file, s.offset_in_file, s.length)));
  torch::StreamCheckpointReader reader(zstd.get(), read);
  ZF_TRY(reader.ReadModel());
  ZF_ASSIGN_OR_RETURN(const torch::Tensor* t, ChunkTensor(reader.checkpoint(), e, c));
  while (true) {
    ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> next, reader.NextStorage());
    if (!next) return Status::Corrupt("the chunk's archive has no record for its storage");
    if (*next == t->storage) break;
  }
  const torch::Storage& storage = reader.checkpoint().storages[t->storage];
  if (storage.method != 0)
    return Status::Unsupported("the chunk's archive deflates its storage record inside a zstd frame")
        .WithRecord(storage.record);
  p->record = storage.record;
  p->data_offset = storage.data_offset;
  p->storage_nbytes = storage.nbytes;
  // torch 2.x writes byteorder before data/: a big-endian chunk is known by now.
  p->swap_unit = reader.checkpoint().big_endian ? torch::ByteSwapUnit(storage) : 1;
  p->view_offset = t->storage_offset;
  p->strides = t->stride;
  p->transform = gather::Transform::kZstd;
  p->frame_offset = s.offset_in_file;
  p->frame_length = s.length;
  return Status::OK();
}

bool IsFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

std::string_view LeftOutWhyName(LeftOutWhy why) {
  switch (why) {
    case LeftOutWhy::kName: return "name";
    case LeftOutWhy::kOptimizerState: return "optimizer state";
    case LeftOutWhy::kNotSelected: return "not selected";
  }
  return "?";
}

namespace {

// GROUP.state.<param>.<state name>, or a key under GROUP.param_groups.
bool IsOptimizerStateKey(const std::string& key, const std::string& group) {
  const std::string state = group + ".state.", groups = group + ".param_groups.";
  if (key.rfind(groups, 0) == 0) return true;
  if (key.rfind(state, 0) != 0) return false;
  const size_t last = key.rfind('.');
  if (last < state.size()) return false;  // no <param> component
  const std::string name = key.substr(last + 1);
  for (const char* n : kOptimizerStateNames)
    if (name == n) return true;
  return false;
}

}  // namespace

std::map<std::string, LeftOutWhy> TrainingStateGroups(const Metadata& md) {
  std::map<std::string, LeftOutWhy> out;
  std::map<std::string, bool> optimizer_like;  // group -> every tensor key so far is optimizer state
  std::map<std::string, bool> has_state;       // group -> some key is GROUP.state.*
  for (const Entry& e : md.entries) {
    if (!e.is_tensor) continue;
    const std::string group = FirstComponent(e.key);
    for (const char* g : kTrainingStateGroups)
      if (group == g) out.emplace(group, LeftOutWhy::kName);
    auto [it, fresh] = optimizer_like.emplace(group, true);
    it->second = it->second && IsOptimizerStateKey(e.key, group);
    if (e.key.rfind(group + ".state.", 0) == 0) has_state[group] = true;
  }
  for (const auto& [group, like] : optimizer_like)
    if (like && has_state.count(group)) out.emplace(group, LeftOutWhy::kOptimizerState);
  return out;
}

std::string KeyGroup(const std::map<std::string, LeftOutWhy>& training, const std::string& key) {
  const std::string first = FirstComponent(key);
  return training.count(first) ? first : "model";
}

Result<Selection> SelectKeys(const Metadata& md, const std::optional<std::string>& select) {
  Selection out;
  const std::map<std::string, LeftOutWhy> training = TrainingStateGroups(md);
  for (size_t i = 0; i < md.entries.size(); ++i) {
    const Entry& e = md.entries[i];
    if (!e.is_tensor) {
      ++out.non_tensor;
      continue;
    }
    bool take = false;
    if (select) {
      take = select->empty() || e.key == *select || e.key.rfind(*select + ".", 0) == 0;
    } else {
      take = !training.count(FirstComponent(e.key));
    }
    if (take) {
      out.entries.push_back(i);
      // Under the selected prefix, names relative to it.
      bool under = select && !select->empty() && e.key.size() > select->size();
      out.names.push_back(under ? e.key.substr(select->size() + 1) : e.key);
    } else {
      const std::string group = FirstComponent(e.key);
      ++out.left_out[group];
      auto why = training.find(group);
      out.left_out_why[group] = select || why == training.end() ? LeftOutWhy::kNotSelected : why->second;
    }
  }
  if (select && out.entries.empty())
    return Status::InvalidArgument("--select '" + *select + "' matches none of the tensor keys (e.g. " +
                                   (md.entries.empty() ? std::string("none") : md.entries[0].key) + ")");
  const std::string_view prefix = kModelPrefix;
  if (!select && !out.names.empty() &&
      std::all_of(out.names.begin(), out.names.end(),
                  [&](const std::string& n) { return n.size() > prefix.size() && n.rfind(prefix, 0) == 0; })) {
    for (std::string& n : out.names) n = n.substr(prefix.size());
    out.stripped_model_prefix = true;
  }
  return out;
}

Result<gather::GatherPlan> PlanDcp(Env* env, const std::string& folder, const Metadata& md, const Selection& selection,
                                  const PlanOptions& options, OpenFiles* files) {
  // Where the chunk boxes come from: .metadata, or the folder of shards.
  const std::string metadata_path = md.safetensors_form ? folder : model::JoinPath(folder, kMetadataFile);
  std::map<std::pair<std::string, std::vector<int64_t>>, size_t> where;  // (fqn, offsets) -> storage item
  for (size_t i = 0; i < md.storage.size(); ++i)
    if (md.storage[i].offset) where.emplace(std::make_pair(md.storage[i].fqn, *md.storage[i].offset), i);

  gather::GatherPlan plan;
  for (size_t k = 0; k < selection.entries.size(); ++k) {
    const Entry& e = md.entries[selection.entries[k]];
    gather::GatherTensor t;
    t.name = selection.names[k];
    t.dtype = options.float_dtype && torch::Info(e.dtype).is_floating ? *options.float_dtype : e.dtype;
    t.shape = e.size;
    t.grid = e.size;
    std::vector<std::string> chunk_names;
    std::vector<const StorageItem*> items;
    for (size_t c = 0; c < e.chunks.size(); ++c) {
      const Chunk& chunk = e.chunks[c];
      auto found = where.find(std::make_pair(e.key, chunk.offsets));
      if (found == where.end())
        return Status::Corrupt("chunk " + std::to_string(c) + " at offsets " + torch::ShapeText(chunk.offsets) +
                               " has no storage_data entry")
            .WithRecord(e.key)
            .WithPath(metadata_path);
      const StorageItem& s = md.storage[found->second];
      items.push_back(&s);
      chunk_names.push_back("chunk " + std::to_string(c) + " (" + s.relative_path + ")");
      gather::Piece p;
      p.offsets = chunk.offsets;
      p.sizes = chunk.sizes;
      p.dtype = e.dtype;
      t.pieces.push_back(std::move(p));
    }
    if (Status s = gather::CheckTiling(e.size, t.pieces, chunk_names); !s.ok())
      return s.WithRecord(e.key).WithPath(metadata_path);
    for (size_t c = 0; c < t.pieces.size(); ++c) {
      const StorageItem& s = *items[c];
      if (!IsFileName(s.relative_path))
        return Status::Unsupported("relative_path '" + s.relative_path + "' is no file name in the folder")
            .WithRecord(e.key)
            .WithPath(metadata_path);
      auto open = files->index.find(s.relative_path);
      if (open == files->index.end()) {
        std::string path = model::JoinPath(folder, s.relative_path);
        ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
        open = files->index.emplace(s.relative_path, static_cast<uint32_t>(files->paths.size())).first;
        files->paths.push_back(path);
        files->sources.push_back(std::move(src));
      }
      if (!s.range_error.empty())
        return Status::Corrupt(chunk_names[c] + ": " + s.range_error)
            .WithRecord(e.key)
            .WithPath(model::JoinPath(folder, s.relative_path));
      const uint32_t f = open->second;
      const std::string& path = files->paths[f];
      const RandomSource& src = *files->sources[f];
      std::optional<uint64_t> end = io::CheckedAdd(s.offset_in_file, s.length);
      if (!end)
        return Status::Corrupt(chunk_names[c] + ": offset " + std::to_string(s.offset_in_file) + " + length " +
                               std::to_string(s.length) + " overflows")
            .WithRecord(e.key)
            .WithPath(path);
      if (*end > src.size())
        return Status::Corrupt(chunk_names[c] + " at [" + std::to_string(s.offset_in_file) + ", " +
                               std::to_string(*end) + ") passes the file's end (" + std::to_string(src.size()) +
                               " bytes)")
            .WithRecord(e.key)
            .WithPath(path)
            .WithOffset(src.size());
      gather::Piece& p = t.pieces[c];
      p.file = f;
      Status located = Locate(src, s, e, e.chunks[c], options.read, &p);
      if (!located.ok()) return InFile(located, s.offset_in_file, !s.transforms.empty() || s.raw, path, e.key);
      if (Status v = gather::CheckPieceView(p); !v.ok()) return InFile(v, 0, true, path, e.key);
    }
    plan.tensors.push_back(std::move(t));
  }
  for (size_t f = 0; f < files->paths.size(); ++f) plan.sources.push_back({files->paths[f], files->sources[f].get()});
  return plan;
}

}  // namespace zerofold::dcp
