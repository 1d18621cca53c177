#include "ranks/merge.h"

#include <algorithm>
#include <map>
#include <span>

#include "gather/piece_reader.h"
#include "pickle/safety.h"
#include "ranks/shard.h"
#include "ranks/values.h"
#include "torch/digest.h"
#include "torch/read.h"

namespace zerofold::ranks {

namespace {

struct Holder {
  int64_t rank = 0;
  gather::Piece piece;
};

// One output tensor as the ranks hold it.
struct Entry {
  std::string name;
  bool dtensor = false;
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<Placement> placements;  // the first holder's
  int64_t first_rank = 0;
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, size_t> box_index;
  std::vector<std::vector<Holder>> boxes;  // holders of each distinct non-empty box, by rank
};

std::string MeshText(const RankValue& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.mesh_shape.size(); ++i) out += (i ? ", " : "") + std::to_string(v.mesh_shape[i]);
  out += v.mesh_shape.size() == 1 ? ",)" : ")";
  for (size_t i = 0; i < v.mesh_dim_names.size(); ++i) out += (i ? ", " : " ") + v.mesh_dim_names[i];
  return out;
}

std::string KindText(bool dtensor) { return dtensor ? "a DTensor" : "a plain tensor"; }

class Planner {
 public:
  Planner(Env* env, const RankFolder& folder, const MergeOptions& options)
      : env_(env), folder_(folder), options_(options) {}

  Result<PlannedMerge> Run() {
    const bool optim = options_.select && (*options_.select == "optimizer" || *options_.select == "optim");
    if (options_.select && !optim && *options_.select != "model")
      return Status::InvalidArgument("--select '" + *options_.select +
                                     "': a folder of rank files holds model and optimizer (--select optimizer)")
          .WithPath(folder_.path);
    if (optim && folder_.optim_files.empty())
      return Status::InvalidArgument("--select optimizer: the folder has no optim_world_size_*_rank_*.pt files")
          .WithPath(folder_.path);
    out_.summary.world = folder_.world;
    out_.summary.strategy = folder_.strategy;
    out_.summary.optimizer = optim;
    const std::vector<std::string>& files = optim ? folder_.optim_files : folder_.model_files;
    optim_ = optim;
    world_ = folder_.world;
    for (size_t r = 0; r < files.size(); ++r) ZF_TRY(ReadRank(static_cast<int64_t>(r), files[r]));
    if (optim) ZF_TRY(NameParams());
    ZF_TRY(Build());
    std::vector<std::string> names;
    for (const gather::GatherTensor& t : out_.gather.tensors) names.push_back(t.name);
    ZF_ASSIGN_OR_RETURN(out_.layout, gather::LayOut(names, {}, {}, options_.only));
    return std::move(out_);
  }

 private:
  Status ReadRank(int64_t rank, const std::string& path) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env_->OpenRandom(path));
    Result<torch::Checkpoint> read = torch::ReadCheckpoint(*src, options_.read);
    if (!read.ok()) return Status(read.status()).WithPath(path);
    const torch::Checkpoint& ckpt = *read;
    if (!ckpt.unsafe_globals.empty()) {
      if (!options_.keep_unsafe) return pickle::RefuseUnsafe(ckpt.unsafe_globals, kUnsafeHint).WithPath(path);
      if (out_.summary.first_unsafe_file.empty()) out_.summary.first_unsafe_file = path;
      for (const std::string& g : ckpt.unsafe_globals)
        if (std::find(out_.summary.unsafe_globals.begin(), out_.summary.unsafe_globals.end(), g) ==
            out_.summary.unsafe_globals.end())
          out_.summary.unsafe_globals.push_back(g);
      out_.warnings.emplace_back(path, "merged despite unsafe globals " + pickle::DescribeUnsafe(ckpt.unsafe_globals) +
                                           " (never run)");
    }
    Result<std::vector<RankValue>> values = FindValues(ckpt);
    if (!values.ok()) return Status(values.status()).WithPath(path);
    if (optim_ && world_ > 1) ZF_TRY(CheckOptimizerForm(*values, path));
    const uint32_t file = static_cast<uint32_t>(out_.sources.size());
    for (const RankValue& v : *values) {
      Status s = Add(rank, file, ckpt, v);
      if (!s.ok()) return s.WithPath(path).WithRecord(v.name);
    }
    out_.gather.sources.push_back(gather::SourceFile{path, src.get()});
    out_.sources.push_back(std::move(src));
    out_.input_files.push_back(path);
    return Status::OK();
  }

  Status Add(int64_t rank, uint32_t file, const torch::Checkpoint& ckpt, const RankValue& v) {
    auto [it, fresh] = index_.emplace(v.name, entries_.size());
    if (fresh) entries_.push_back(Entry{v.name, v.dtensor, v.dtype, v.shape, v.placements, rank, {}, {}});
    Entry& e = entries_[it->second];
    if (e.dtensor != v.dtensor || e.dtype != v.dtype || e.shape != v.shape)
      return Status::Corrupt("rank " + std::to_string(rank) + " holds " + KindText(v.dtensor) + " " +
                             std::string(torch::Info(v.dtype).name) + " " + torch::ShapeText(v.shape) + ", rank " +
                             std::to_string(e.first_rank) + " " + KindText(e.dtensor) + " " +
                             std::string(torch::Info(e.dtype).name) + " " + torch::ShapeText(e.shape));
    Box box{std::vector<int64_t>(v.shape.size(), 0), v.shape};
    if (v.dtensor) {
      ZF_ASSIGN_OR_RETURN(box, LocalBox(v.shape, v.mesh_shape, v.coords, v.placements));
      const std::string mesh = MeshText(v);
      if (std::find(out_.summary.meshes.begin(), out_.summary.meshes.end(), mesh) == out_.summary.meshes.end())
        out_.summary.meshes.push_back(mesh);
    }
    const torch::Tensor& t = ckpt.tensors[v.tensor];
    if (t.shape != box.sizes)
      return Status::Corrupt("rank " + std::to_string(rank) + "'s local tensor is " + torch::ShapeText(t.shape) +
                             ", its placements " + PlacementsText(v.placements) + " give " +
                             torch::ShapeText(box.sizes) + " of " + torch::ShapeText(v.shape));
    if (box.empty()) return Status::OK();
    Holder h;
    h.rank = rank;
    gather::Piece& p = h.piece;
    p.offsets = box.offsets;
    p.sizes = box.sizes;
    p.file = file;
    p.dtype = t.dtype;
    gather::PlaceInStorage(ckpt.storages[t.storage], 0, &p);
    p.view_offset = t.storage_offset;
    p.strides = t.stride;
    ZF_TRY(gather::CheckPieceView(p));
    auto [b, new_box] = e.box_index.emplace(std::make_pair(box.offsets, box.sizes), e.boxes.size());
    if (new_box) e.boxes.emplace_back();
    e.boxes[b->second].push_back(std::move(h));
    return Status::OK();
  }

  // FSDP1's optimizer.state_dict() (verl saves it as is) holds each rank's
  // slice of each flattened param: plain 1-D tensors of different lengths,
  // no placements; only FSDP's flat-param layout maps them back.
  Status CheckOptimizerForm(const std::vector<RankValue>& values, const std::string& path) const {
    bool dtensor = false, shaped = false;
    for (const RankValue& v : values) {
      dtensor |= v.dtensor;
      shaped |= !v.dtensor && !v.shape.empty();
    }
    if (dtensor || !shaped) return Status::OK();
    return Status::Unsupported(
               "the optimizer state is plain tensors, no DTensors: FSDP1's per-rank slices of flattened params "
               "(optimizer.state_dict() under SHARDED_STATE_DICT), which only FSDP's flat-param layout maps back")
        .WithPath(path);
  }

  // optimizer.state_dict() numbers params in model.parameters() order: the
  // model file's DTensor keys (FSDP2 makes every param a DTensor, buffers
  // stay plain) in order.
  Status NameParams() {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env_->OpenRandom(folder_.model_files[0]));
    Result<torch::Checkpoint> read = torch::ReadCheckpoint(*src, options_.read);
    if (!read.ok()) return Status(read.status()).WithPath(folder_.model_files[0]);
    Result<std::vector<RankValue>> values = FindValues(*read);
    if (!values.ok()) return Status(values.status()).WithPath(folder_.model_files[0]);
    std::vector<const RankValue*> params;
    for (const RankValue& v : *values)
      if (v.dtensor) params.push_back(&v);
    std::vector<std::string> renamed;
    for (const Entry& e : entries_) {
      const std::string prefix = "state.";
      const size_t dot = e.name.find('.', prefix.size());
      int64_t id = -1;
      if (e.name.compare(0, prefix.size(), prefix) == 0 && dot != std::string::npos) {
        const std::string digits = e.name.substr(prefix.size(), dot - prefix.size());
        if (!digits.empty() && digits.size() < 10 && digits.find_first_not_of("0123456789") == std::string::npos)
          id = std::stoll(digits);
      }
      if (id < 0 || id >= static_cast<int64_t>(params.size()) || (e.dtensor && e.shape != params[id]->shape)) {
        out_.warnings.emplace_back(folder_.path, "optimizer state " + e.name +
                                                     " matches no param of the model file; param ids kept as numbers");
        return Status::OK();
      }
      renamed.push_back(prefix + params[id]->name + e.name.substr(dot));
    }
    for (size_t i = 0; i < entries_.size(); ++i) entries_[i].name = renamed[i];
    out_.summary.optimizer_names_mapped = true;
    return Status::OK();
  }

  Result<torch::Hash128> HashPiece(const gather::Piece& p) {
    const uint32_t itemsize = torch::Info(p.dtype).itemsize;
    if (window_.size() < gather::kMinReaderWindowBytes) {
      window_.resize(std::max<size_t>(options_.buffer_bytes, gather::kMinReaderWindowBytes));
      buffer_.resize(std::max<size_t>(options_.buffer_bytes, 64));
    }
    gather::PieceReader reader(p, out_.gather.sources[p.file], window_);
    torch::Xxh3Hasher hasher;
    uint64_t left = gather::NumelOf(p.sizes) * itemsize;
    const size_t step = std::max<size_t>(buffer_.size() / itemsize, 1) * itemsize;
    while (left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, step));
      ZF_TRY(reader.Read(std::span<std::byte>(buffer_.data(), n)));
      hasher.Update(std::span<const std::byte>(buffer_.data(), n));
      left -= n;
    }
    return hasher.Digest();
  }

  Status Build() {
    for (Entry& e : entries_) {
      gather::GatherTensor t;
      t.name = e.name;
      t.dtype = options_.dtype && torch::Info(e.dtype).is_floating ? *options_.dtype : e.dtype;
      t.shape = e.shape;
      t.grid = e.shape;
      std::vector<std::string> piece_names;
      for (std::vector<Holder>& holders : e.boxes) {
        ZF_TRY(CheckCopies(e, holders));
        piece_names.push_back("rank " + std::to_string(holders[0].rank));
        t.pieces.push_back(std::move(holders[0].piece));
      }
      Status tiled = gather::CheckTiling(t.grid, t.pieces, piece_names);
      if (!tiled.ok()) return tiled.WithPath(folder_.path).WithRecord(e.name);
      (e.dtensor ? out_.summary.dtensors : out_.summary.plain)++;
      out_.summary.placements.push_back(e.dtensor ? PlacementsText(e.placements) : "");
      out_.gather.tensors.push_back(std::move(t));
    }
    return Status::OK();
  }

  // Every rank holding one box holds the same bytes.
  Status CheckCopies(const Entry& e, const std::vector<Holder>& holders) {
    if (holders.size() < 2 || !options_.check_copies) return Status::OK();
    ZF_ASSIGN_OR_RETURN(torch::Hash128 first, HashPiece(holders[0].piece));
    for (size_t i = 1; i < holders.size(); ++i) {
      ZF_ASSIGN_OR_RETURN(torch::Hash128 h, HashPiece(holders[i].piece));
      if (h != first)
        return Status::Corrupt("replicated value differs between rank " + std::to_string(holders[0].rank) +
                               " and rank " + std::to_string(holders[i].rank) + " (box at " +
                               torch::ShapeText(holders[0].piece.offsets) + " of " +
                               torch::ShapeText(holders[0].piece.sizes) + "; xxh3 " + first.Hex() + " vs " +
                               h.Hex() + "): refusing to pick one")
            .WithPath(folder_.path)
            .WithRecord(e.name);
      ++out_.summary.replicated_checked;
    }
    return Status::OK();
  }

  Env* env_;
  const RankFolder& folder_;
  const MergeOptions& options_;
  PlannedMerge out_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
  std::vector<std::byte> window_, buffer_;
  bool optim_ = false;
  int64_t world_ = 0;
};

}  // namespace

Result<PlannedMerge> PlanRankMerge(Env* env, const RankFolder& folder, const MergeOptions& options) {
  Planner planner(env, folder, options);
  return planner.Run();
}

}  // namespace zerofold::ranks
