#include "zero/plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "io/checked_math.h"
#include "torch/checkpoint.h"

namespace zerofold::zero {

using torch::DType;

std::string_view TensorKindName(TensorKind kind) {
  switch (kind) {
    case TensorKind::kParam: return "param";
    case TensorKind::kFrozenParam: return "frozen param";
    case TensorKind::kBuffer: return "buffer";
  }
  return "?";
}

namespace {

// DeepSpeed pads every stage-1/2 flat group to a multiple of
// nccl_start_alignment_factor x world size (stage_1_and_2.py, bf16_optimizer.py).
constexpr uint64_t kNcclStartAlignmentFactor = 2;

Status Corrupt(std::string message, std::string_view file, std::string_view record = {}) {
  Status s = Status::Corrupt(std::move(message));
  s.WithPath(file);
  if (!record.empty()) s.WithRecord(record);
  return s;
}

// Elements of a recorded shape; kCorrupt for a negative size or overflow.
Result<uint64_t> Numel(const std::vector<int64_t>& shape, std::string_view what, std::string_view file,
                       std::string_view record) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    std::optional<uint64_t> m;
    if (d >= 0) m = io::CheckedMul<uint64_t>(n, static_cast<uint64_t>(d));
    if (!m) return Corrupt(std::string(what) + " has shape " + torch::ShapeText(shape) + ": " +
                               (d < 0 ? "negative size" : "element count overflows"),
                           file, record);
    n = *m;
  }
  return n;
}

// Floating dtypes whose elements convert one by one. float4_e2m1fn_x2 packs
// two values per element, so a tensor of it keeps its dtype.
bool IsFloating(DType d) { return torch::Info(d).is_floating && d != DType::kFloat4E2M1FNx2; }

// The dtype a tensor stored as `source` comes out as (README.md: dtypes).
DType OutputDType(DType source, const PlanOptions& options) {
  if (!IsFloating(source)) return source;
  if (options.float_dtype) return *options.float_dtype;
  return source == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

// True when the view's elements in row-major order are consecutive in its
// storage. Size-1 dims may have any stride; empty tensors are contiguous.
bool IsContiguous(const TensorMeta& t) {
  if (t.stride.size() != t.shape.size()) return false;
  for (int64_t d : t.shape) {
    if (d == 0) return true;
  }
  int64_t expect = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.stride[i] != expect) return false;
    std::optional<int64_t> next = io::CheckedMul<int64_t>(expect, t.shape[i]);
    if (!next) return false;
    expect = *next;
  }
  return true;
}

// One piece of a sequence laid end to end: `len` elements of `tensor`.
struct Part {
  uint32_t file = 0;
  const TensorMeta* tensor = nullptr;
  uint64_t len = 0;
  std::optional<SourceKind> source;  // unset: the sequence's own
};

// Parts laid end to end, cut into slices. Take() calls must come with
// non-decreasing `begin`, so a whole pass over many params costs
// O(params + parts).
class EndToEnd {
 public:
  EndToEnd(SourceKind source, std::vector<Part> parts) : source_(source), parts_(std::move(parts)) {
    for (const Part& p : parts_) total_ += p.len;  // callers checked the sum
  }
  uint64_t total() const { return total_; }

  // Appends the slices of elements [begin, begin + count).
  // REQUIRES: begin + count <= total(); begin >= the previous call's begin.
  void Take(uint64_t begin, uint64_t count, std::vector<SourceSlice>* out) {
    while (count > 0) {
      while (begin >= start_ + parts_[index_].len) {
        start_ += parts_[index_].len;
        ++index_;
      }
      const Part& p = parts_[index_];
      uint64_t within = begin - start_;
      uint64_t n = std::min(count, p.len - within);
      out->push_back(SourceSlice{p.source.value_or(source_), p.file, p.tensor->storage,
                                 static_cast<uint64_t>(p.tensor->storage_offset) + within, n, p.tensor->dtype});
      begin += n;
      count -= n;
    }
  }

 private:
  SourceKind source_;
  std::vector<Part> parts_;
  uint64_t total_ = 0;
  size_t index_ = 0;
  uint64_t start_ = 0;  // first element of parts_[index_]
};

// Checks a tensor that a slice will read `len` elements from: contiguous,
// a non-negative offset, no overflow. `what` names it in messages.
Status CheckSource(const TensorMeta& t, uint64_t len, std::string_view what, std::string_view file,
                   std::string_view record, Code not_contiguous) {
  if (!IsContiguous(t)) {
    std::string m = std::string(what) + " is not contiguous (shape " + torch::ShapeText(t.shape) + ", stride " +
                    torch::ShapeText(t.stride) + ")";
    Status s = not_contiguous == Code::kCorrupt ? Status::Corrupt(m) : Status::Unsupported(m);
    s.WithPath(file);
    if (!record.empty()) s.WithRecord(record);
    return s;
  }
  if (t.storage_offset < 0 ||
      !io::CheckedAdd<uint64_t>(static_cast<uint64_t>(t.storage_offset), len)) {
    return Corrupt(std::string(what) + " has storage offset " + std::to_string(t.storage_offset), file, record);
  }
  return Status::OK();
}

// A rank's fp32 partition: a flat floating tensor. Returns its length.
Result<uint64_t> CheckPartition(const TensorMeta& t, std::string_view what, std::string_view file) {
  ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(t.shape, what, file, {}));
  if (t.shape.size() != 1) {
    return Corrupt(std::string(what) + " is not a flat 1-D tensor (shape " + torch::ShapeText(t.shape) + ")", file);
  }
  if (!IsFloating(t.dtype)) return Corrupt(std::string(what) + " is not floating point", file);
  ZF_TRY(CheckSource(t, n, what, file, {}, Code::kCorrupt));
  return n;
}

std::string PartitionName(const OptimStates& o, size_t group) {
  return std::string(o.fp32_groups_key == Fp32GroupsKey::kFp32FlatGroups ? "fp32_flat_groups"
                                                                          : "single_partition_of_fp32_groups") +
         "[" + std::to_string(group) + "] of rank " + std::to_string(o.rank);
}

std::string RankList(size_t n) {
  return n == 1 ? "rank 0" : "ranks 0-" + std::to_string(n - 1);
}

// The planner's working state.
class Planner {
 public:
  Planner(const ZeroCheckpoint& ckpt, const PlanOptions& options) : ckpt_(ckpt), options_(options) {}

  Result<MergePlan> Run();

 private:
  Status CheckRanks();
  Status CheckModelStates();
  Status IndexModule();
  Status PlanStage12Params();
  Status CrossCheckMappings(size_t group, const std::vector<NamedShape>& shapes,
                            const std::vector<std::vector<SourceSlice>>& placed);
  Status PlanStage3Params();
  Status PlanStage0Params();
  Status PlanUniversalParams();
  Status CheckParallelism() const;
  Status DeriveParamShapes();
  Status PlanBuffers();
  Status PlanTies();
  Status PlanFrozen();
  Status ResolveTies();
  void Order();

  Status AddParam(const NamedShape& p, std::vector<SourceSlice> slices, DType dtype);
  Status AddFromModule(const std::string& name, TensorKind kind);
  bool Known(const std::string& name) const { return output_index_.count(name) || tie_index_.count(name); }
  const ModelStates& ms() const { return ckpt_.model_states[0]; }
  // The recorded param_shapes, or those derived from param_slice_mappings.
  const std::vector<std::vector<NamedShape>>& shapes() const {
    return ms().param_shapes_recorded ? ms().param_shapes : derived_shapes_;
  }

  const ZeroCheckpoint& ckpt_;
  const PlanOptions& options_;
  uint32_t world_size_ = 0;
  int stage_ = 0;
  bool bf16_optimizer_ = false;

  std::unordered_map<std::string, size_t> module_index_;   // name -> index in ms().module
  std::vector<OutputTensor> outputs_;                       // in planning order
  std::unordered_map<std::string, size_t> output_index_;
  std::vector<Tie> ties_;
  std::unordered_map<std::string, size_t> tie_index_;
  std::vector<std::string> leftovers_;                      // module names after params and buffers
  std::vector<std::vector<NamedShape>> derived_shapes_;
  MergePlan plan_;
};

Status Planner::CheckRanks() {
  const std::vector<OptimStates>& optim = ckpt_.optim_states;
  if (ckpt_.universal) {
    if (ckpt_.model_states.empty()) return Status::NotFound("no model states file in the universal checkpoint");
    stage_ = ckpt_.model_states.size() > 1 || ckpt_.universal_stage == 3 ? 3 : ms().frozen_param_shapes ? 2 : 1;
    world_size_ = static_cast<uint32_t>(std::max<int64_t>(1, ms().dp_world_size.value_or(1)));
    return Status::OK();
  }
  if (optim.empty()) {
    if (ckpt_.model_states.empty() || !ms().has_optimizer) {
      return Status::NotFound("no *_optim_states.pt files: not a ZeRO checkpoint");
    }
    Zero0Optimizer kind = ms().optimizer_kind;
    if (kind == Zero0Optimizer::kBf16) {
      Status s = Status::Unsupported(
          "ZeRO-0 BF16_Optimizer state in the model states but no bf16_zero_pp_rank_R optim-states files: each "
          "rank's fp32 partition is in those");
      return s.WithPath(ms().file);
    }
    stage_ = 0;
    int64_t ws = ms().dp_world_size.value_or(1);
    world_size_ = ws >= 1 && std::in_range<uint32_t>(ws) ? static_cast<uint32_t>(ws) : 1;
    return Status::OK();
  }
  if (!std::in_range<uint32_t>(optim.size())) return Status::Limit("too many optim-states files");
  world_size_ = static_cast<uint32_t>(optim.size());
  for (size_t r = 0; r < optim.size(); ++r) {
    if (optim[r].rank != r) {
      Status s = Status::InvalidArgument("optim states out of rank order: entry " + std::to_string(r) +
                                         " is rank " + std::to_string(optim[r].rank));
      return s.WithPath(optim[r].file);
    }
  }

  const OptimStates& first = optim[0];
  for (const OptimStates& o : optim) {
    if (o.zero_stage != first.zero_stage) {
      auto say = [](const OptimStates& x) {
        return x.zero_stage ? "zero_stage " + std::to_string(*x.zero_stage) : std::string("no zero_stage");
      };
      return Corrupt("rank " + std::to_string(o.rank) + " records " + say(o) + ", rank 0 records " +
                         say(first) + ": files of different checkpoints",
                     o.file);
    }
  }
  if (first.zero_stage) {
    int64_t z = *first.zero_stage;
    if (z == 0) {
      Status s = Status::Unsupported("ZeRO-0 checkpoint (zero_stage 0, disabled): nothing is partitioned");
      return s.WithPath(first.file);
    }
    if (z < 0 || z > 3) return Corrupt("zero_stage " + std::to_string(z) + " is not 0-3", first.file);
    stage_ = static_cast<int>(z);
  } else {
    stage_ = 1;  // BF16_Optimizer partitions optimizer states only
    bf16_optimizer_ = true;
  }

  Fp32GroupsKey want = stage_ == 3 ? Fp32GroupsKey::kFp32FlatGroups : Fp32GroupsKey::kSinglePartitionOfFp32Groups;
  for (const OptimStates& o : optim) {
    if (o.fp32_groups_key != want) {
      return Corrupt("a stage " + std::to_string(stage_) + " checkpoint keeps its fp32 weights in " +
                         (stage_ == 3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups") +
                         ", this file holds the other key",
                     o.file);
    }
    // DeepSpeed writes a list (one per param group) in stage 1/2 and an int
    // in stage 3; either form is read as "these groups span that many ranks".
    if (o.partition_count.empty()) return Corrupt("partition_count is empty", o.file);
    for (int64_t pc : o.partition_count) {
      if (pc != o.partition_count[0]) {
        Status s = Status::Unsupported("param groups partitioned over different world sizes (partition_count " +
                                       torch::ShapeText(o.partition_count) + "): MoE expert groups are not supported");
        return s.WithPath(o.file);
      }
    }
    int64_t pc = o.partition_count[0];
    if (pc < 1) return Corrupt("partition_count " + std::to_string(pc) + " is not positive", o.file);
    if (std::cmp_greater(pc, world_size_)) {
      Status s = Status::NotFound("partition_count says " + std::to_string(pc) + " ranks, found optim states of " +
                                  std::to_string(world_size_) + " (" + RankList(world_size_) + "): missing " +
                                  (pc - world_size_ == 1 ? "rank " + std::to_string(world_size_)
                                                         : "ranks " + std::to_string(world_size_) + "-" +
                                                               std::to_string(pc - 1)));
      return s.WithPath(o.file);
    }
    if (std::cmp_less(pc, world_size_)) {
      return Corrupt("partition_count says " + std::to_string(pc) + " ranks, found optim states of " +
                         std::to_string(world_size_) + " (" + RankList(world_size_) + "): rank " +
                         std::to_string(pc) + " and up are not part of this checkpoint",
                     o.file);
    }
  }
  return Status::OK();
}

Status Planner::CheckModelStates() {
  const std::vector<ModelStates>& models = ckpt_.model_states;
  size_t want = stage_ == 3 && !ckpt_.universal ? world_size_ : 1;
  if (ckpt_.universal && stage_ == 3) want = models.size();
  if (models.size() < want) {
    if (stage_ != 3) return Status::NotFound("no mp_rank_00_model_states.pt");
    return Status::NotFound("a stage 3 checkpoint has one model-states file per rank: found " +
                            std::to_string(models.size()) + " for " + std::to_string(world_size_) +
                            " ranks, missing zero_pp_rank_" + std::to_string(models.size()) +
                            "_mp_rank_00_model_states.pt");
  }
  if (models.size() > want) {
    if (stage_ != 3) {
      return Status::InvalidArgument("a stage " + std::to_string(stage_) + " checkpoint has one model-states file, got " +
                                     std::to_string(models.size()));
    }
    return Corrupt("a stage 3 checkpoint has one model-states file per rank: found " +
                       std::to_string(models.size()) + " for " + std::to_string(world_size_) + " ranks",
                   models[want].file);
  }
  if (stage_ != 0 && !ckpt_.universal && ms().dp_world_size && *ms().dp_world_size != world_size_) {
    return Corrupt("dp_world_size is " + std::to_string(*ms().dp_world_size) + " but there are " +
                       std::to_string(world_size_) + " optim-states files",
                   ms().file);
  }
  auto same_shapes = [](const std::vector<NamedShape>& a, const std::vector<NamedShape>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || a[i].shape != b[i].shape) return false;
    }
    return true;
  };
  for (size_t r = 1; r < models.size(); ++r) {
    const ModelStates& m = models[r];
    bool same = m.param_shapes.size() == ms().param_shapes.size() && m.buffer_names == ms().buffer_names &&
                m.frozen_param_shapes.has_value() == ms().frozen_param_shapes.has_value();
    for (size_t g = 0; same && g < m.param_shapes.size(); ++g) {
      same = same_shapes(m.param_shapes[g], ms().param_shapes[g]);
    }
    if (same && m.frozen_param_shapes) same = same_shapes(*m.frozen_param_shapes, *ms().frozen_param_shapes);
    if (!same) {
      return Corrupt("rank " + std::to_string(r) +
                         "'s model states record other param_shapes, buffer_names or frozen_param_shapes than rank 0's",
                     m.file);
    }
  }
  return Status::OK();
}

Status Planner::IndexModule() {
  for (size_t i = 0; i < ms().module.size(); ++i) {
    if (!module_index_.emplace(ms().module[i].name, i).second) {
      return Corrupt("module names " + ms().module[i].name + " twice", ms().file, ms().module[i].name);
    }
  }
  return Status::OK();
}

Status Planner::AddParam(const NamedShape& p, std::vector<SourceSlice> slices, DType dtype) {
  if (Known(p.name)) return Corrupt("param_shapes names " + p.name + " twice", ms().file, p.name);
  output_index_.emplace(p.name, outputs_.size());
  outputs_.push_back(OutputTensor{p.name, TensorKind::kParam, OutputDType(dtype, options_), p.shape, std::move(slices)});
  return Status::OK();
}

Status Planner::PlanStage12Params() {
  const std::vector<OptimStates>& optim = ckpt_.optim_states;
  size_t groups = shapes().size();
  for (const OptimStates& o : optim) {
    if (o.fp32_groups.size() != groups || (o.partition_count_is_list && o.partition_count.size() != groups)) {
      return Corrupt("rank " + std::to_string(o.rank) + " has " + std::to_string(o.fp32_groups.size()) +
                         " fp32 partitions and partition_count " + torch::ShapeText(o.partition_count) + ", param_shapes has " +
                         std::to_string(groups) + " param groups",
                     o.file);
    }
  }
  const uint64_t align = kNcclStartAlignmentFactor * world_size_;
  auto round_up = [align](uint64_t x) { return (x / align + (x % align != 0)) * align; };  // x < 2^63 here

  for (size_t g = 0; g < groups; ++g) {
    const std::vector<NamedShape>& shapes = this->shapes()[g];
    std::vector<Part> parts;
    std::vector<uint64_t> lens;
    uint64_t total = 0;
    for (const OptimStates& o : optim) {
      ZF_ASSIGN_OR_RETURN(uint64_t n, CheckPartition(o.fp32_groups[g], PartitionName(o, g), o.file));
      std::optional<uint64_t> sum = io::CheckedAdd(total, n);
      if (!sum || *sum > (uint64_t{1} << 62)) return Corrupt("fp32 partitions too large", o.file);
      total = *sum;
      lens.push_back(n);
      parts.push_back(Part{o.rank, &o.fp32_groups[g], n, std::nullopt});
    }
    std::vector<uint64_t> numels;
    uint64_t need = 0;
    for (const NamedShape& p : shapes) {
      ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(p.shape, "param " + p.name, ms().file, p.name));
      std::optional<uint64_t> sum = io::CheckedAdd(need, n);
      if (!sum || *sum > (uint64_t{1} << 62)) return Corrupt("param_shapes total overflows", ms().file, p.name);
      need = *sum;
      numels.push_back(n);
    }
    std::string lens_text;
    for (size_t r = 0; r < lens.size(); ++r) lens_text += (r ? "+" : "") + std::to_string(lens[r]);
    if (bf16_optimizer_) {
      for (size_t r = 1; r < lens.size(); ++r) {
        if (lens[r] != lens[0]) {
          return Corrupt("param group " + std::to_string(g) +
                             ": BF16_Optimizer saves equal partitions, the ranks hold " + lens_text + " elements",
                         optim[r].file);
        }
      }
    }
    if (total < need || round_up(total) != round_up(need)) {
      return Corrupt("param group " + std::to_string(g) + ": the " + std::to_string(world_size_) +
                         " ranks' partitions hold " + std::to_string(total) + " elements laid end to end (" +
                         lens_text + "), the recorded shapes need " + std::to_string(need) + " (" +
                         std::to_string(shapes.size()) + " params); both must round up to the same multiple of " +
                         std::to_string(align) + " (2 x world size " + std::to_string(world_size_) + "): " +
                         std::to_string(round_up(total)) + " vs " + std::to_string(round_up(need)),
                     ms().file);
    }
    EndToEnd flat(SourceKind::kOptimStates, std::move(parts));
    std::vector<std::vector<SourceSlice>> placed;
    uint64_t offset = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<SourceSlice> slices;
      flat.Take(offset, numels[i], &slices);
      offset += numels[i];
      placed.push_back(slices);
      ZF_TRY(AddParam(shapes[i], std::move(slices), optim[0].fp32_groups[g].dtype));
    }
    ZF_TRY(CrossCheckMappings(g, shapes, placed));
  }
  return Status::OK();
}

// param_slice_mappings[g] of each rank lists the params whose fragments that
// rank's partition holds: (start within the partition, numel). They must be
// exactly the placements computed from param_shapes.
Status Planner::CrossCheckMappings(size_t group, const std::vector<NamedShape>& shapes,
                                   const std::vector<std::vector<SourceSlice>>& placed) {
  // Per rank, the params placed there: (param index, slice). A rank's
  // partition is one tensor, so a param has at most one slice per rank.
  std::vector<std::vector<std::pair<size_t, const SourceSlice*>>> by_rank(world_size_);
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (const SourceSlice& s : placed[i]) by_rank[s.file].emplace_back(i, &s);
  }
  for (const OptimStates& o : ckpt_.optim_states) {
    if (!o.param_slice_mappings) continue;
    const std::vector<std::vector<SliceMapping>>& mappings = *o.param_slice_mappings;
    if (mappings.size() != this->shapes().size()) {
      return Corrupt("param_slice_mappings has " + std::to_string(mappings.size()) + " groups, param_shapes " +
                         std::to_string(this->shapes().size()),
                     o.file);
    }
    // Placement of each param on this rank: (start in partition, count).
    std::unordered_map<std::string_view, std::pair<uint64_t, uint64_t>> here;
    uint64_t base = static_cast<uint64_t>(o.fp32_groups[group].storage_offset);
    for (const auto& [i, s] : by_rank[o.rank]) {
      here.emplace(shapes[i].name, std::make_pair(s->offset - base, s->count));
    }
    size_t matched = 0;
    std::unordered_set<std::string_view> seen;
    for (const SliceMapping& m : mappings[group]) {
      std::string where = "param_slice_mappings[" + std::to_string(group) + "] of rank " + std::to_string(o.rank);
      if (!seen.insert(m.name).second) return Corrupt(where + " names " + m.name + " twice", o.file, m.name);
      auto it = here.find(m.name);
      if (it == here.end()) {
        if (m.numel == 0) continue;
        return Corrupt(where + " place " + m.name + " at " + std::to_string(m.start) + " (+" +
                           std::to_string(m.numel) + "), the recorded shapes put none of it on this rank",
                       o.file, m.name);
      }
      if (std::cmp_not_equal(m.start, it->second.first) || std::cmp_not_equal(m.numel, it->second.second)) {
        return Corrupt(where + " place " + m.name + " at " + std::to_string(m.start) + " (+" +
                           std::to_string(m.numel) + "), the recorded shapes at " + std::to_string(it->second.first) +
                           " (+" + std::to_string(it->second.second) + ")",
                       o.file, m.name);
      }
      ++matched;
    }
    if (matched != here.size()) {
      for (const auto& [name, at] : here) {
        if (!seen.count(name)) {
          return Corrupt("param_slice_mappings[" + std::to_string(group) + "] of rank " + std::to_string(o.rank) +
                             " lack " + std::string(name) + ", which the recorded shapes put at " +
                             std::to_string(at.first) + " (+" + std::to_string(at.second) + ")",
                         o.file, name);
        }
      }
    }
  }
  return Status::OK();
}

Status Planner::PlanStage3Params() {
  const std::vector<OptimStates>& optim = ckpt_.optim_states;
  std::vector<const NamedShape*> params;
  for (const std::vector<NamedShape>& group : shapes()) {
    for (const NamedShape& p : group) params.push_back(&p);
  }
  std::vector<uint64_t> numels;
  uint64_t per_rank = 0;  // sum of ceil(numel / ws)
  for (const NamedShape* p : params) {
    ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(p->shape, "param " + p->name, ms().file, p->name));
    numels.push_back(n);
    std::optional<uint64_t> sum = io::CheckedAdd(per_rank, n / world_size_ + (n % world_size_ != 0));
    if (!sum || *sum > (uint64_t{1} << 62)) return Corrupt("param_shapes total overflows", ms().file, p->name);
    per_rank = *sum;
  }
  std::vector<EndToEnd> ranks;
  for (const OptimStates& o : optim) {
    std::vector<Part> parts;
    uint64_t total = 0;
    for (size_t g = 0; g < o.fp32_groups.size(); ++g) {
      ZF_ASSIGN_OR_RETURN(uint64_t n, CheckPartition(o.fp32_groups[g], PartitionName(o, g), o.file));
      std::optional<uint64_t> sum = io::CheckedAdd(total, n);
      if (!sum) return Corrupt("fp32 partitions too large", o.file);
      total = *sum;
      if (g < o.offloaded_file.size() && o.offloaded_file[g] >= 0) {
        parts.push_back(Part{static_cast<uint32_t>(o.offloaded_file[g]), &o.fp32_groups[g], n, SourceKind::kParamFile});
      } else {
        parts.push_back(Part{o.rank, &o.fp32_groups[g], n, std::nullopt});
      }
    }
    if (total != per_rank) {
      return Corrupt("rank " + std::to_string(o.rank) + "'s fp32_flat_groups hold " + std::to_string(total) +
                         " elements in " + std::to_string(parts.size()) + " sub-groups, the recorded shapes need " +
                         std::to_string(per_rank) + " per rank (sum of ceil(numel / " + std::to_string(world_size_) +
                         ") over " + std::to_string(params.size()) + " params)",
                     o.file);
    }
    ranks.emplace_back(SourceKind::kOptimStates, std::move(parts));
  }
  uint64_t offset = 0;  // within each rank's flat sequence
  for (size_t i = 0; i < params.size(); ++i) {
    uint64_t n = numels[i];
    uint64_t piece = n / world_size_ + (n % world_size_ != 0);
    std::vector<SourceSlice> slices;
    uint64_t left = n;
    for (EndToEnd& rank : ranks) {
      uint64_t take = std::min(piece, left);
      if (take) rank.Take(offset, take, &slices);
      left -= take;
    }
    offset += piece;
    ZF_TRY(AddParam(*params[i], std::move(slices), optim[0].fp32_groups.empty() ? DType::kFloat32
                                                                                 : optim[0].fp32_groups[0].dtype));
  }
  return Status::OK();
}

// Tensor, pipeline and expert parallelism, by what the model states record
// (file names tell older checkpoints: zero/files.h).
Status Planner::CheckParallelism() const {
  const ModelStates& m = ms();
  auto refuse = [&m](std::string why) { return Status::Unsupported(std::move(why)).WithPath(m.file); };
  if (m.tp_degree && *m.tp_degree > 1) {
    return refuse("tensor-parallel checkpoint: checkpoint_parallel_dimensions records tp_degree " +
                  std::to_string(*m.tp_degree) + " (only 1 is supported)");
  }
  if (m.pp_degree && *m.pp_degree > 1) {
    return refuse("pipeline-parallel checkpoint: checkpoint_parallel_dimensions records pp_degree " +
                  std::to_string(*m.pp_degree) + " (only 1 is supported)");
  }
  if (m.has_autoep_layers) return refuse("expert-parallel (AutoEP) checkpoint: ds_autoep_layers is recorded");
  if (m.num_experts) {
    for (int64_t n : *m.num_experts) {
      if (n > 1) return refuse("MoE checkpoint: num_experts records " + torch::ShapeText(*m.num_experts));
    }
  }
  return Status::OK();
}

// param_shapes None beside optim-states files (v0.18.5+ stage-0 bf16, which
// saves BF16_Optimizer's files but no param_shapes): each group's params in
// the order of the ranks' param_slice_mappings (rank, then start), shaped
// as `module` holds them.
Status Planner::DeriveParamShapes() {
  if (ms().param_shapes_recorded) return Status::OK();
  const std::vector<OptimStates>& optim = ckpt_.optim_states;
  size_t groups = optim[0].fp32_groups.size();
  derived_shapes_.assign(groups, {});
  for (size_t g = 0; g < groups; ++g) {
    std::unordered_set<std::string> seen;
    for (const OptimStates& o : optim) {
      if (!o.param_slice_mappings || o.param_slice_mappings->size() != groups) {
        Status s = Status::Unsupported("param_shapes is None and param_slice_mappings " +
                                       std::string(o.param_slice_mappings ? "has another group count" : "is absent") +
                                       ": the order of the fp32 partitions' params is not recorded");
        return s.WithPath(o.file);
      }
      std::vector<const SliceMapping*> here;
      for (const SliceMapping& sm : (*o.param_slice_mappings)[g]) {
        if (sm.numel > 0) here.push_back(&sm);
      }
      std::sort(here.begin(), here.end(), [](const SliceMapping* a, const SliceMapping* b) { return a->start < b->start; });
      for (const SliceMapping* sm : here) {
        if (!seen.insert(sm->name).second) continue;
        auto it = module_index_.find(sm->name);
        if (it == module_index_.end()) {
          return Corrupt("param_slice_mappings names " + sm->name + ", which module lacks", o.file, sm->name);
        }
        derived_shapes_[g].push_back(NamedShape{sm->name, ms().module[it->second].tensor.shape});
      }
    }
  }
  return Status::OK();
}

// ZeRO-0: FP16 masters as linked to their params; fp32 training (a torch
// optimizer's own state) keeps the weights in `module`, every param once.
Status Planner::PlanStage0Params() {
  if (ms().optimizer_kind == Zero0Optimizer::kTorch) {
    std::unordered_set<std::string_view> buffers(ms().buffer_names.begin(), ms().buffer_names.end());
    std::set<std::tuple<std::string, int64_t, std::vector<int64_t>, std::vector<int64_t>>> views;
    for (const NamedTensor& t : ms().module) {
      if (buffers.count(t.name)) continue;
      if (!views.emplace(t.tensor.storage, t.tensor.storage_offset, t.tensor.shape, t.tensor.stride).second) continue;
      ZF_TRY(AddFromModule(t.name, TensorKind::kParam));
    }
    return Status::OK();
  }
  size_t groups_with_masters = 0;
  for (const std::vector<TensorMeta>& g : ms().optimizer_fp32_groups) groups_with_masters += !g.empty();
  if (ckpt_.zero0_masters.empty() && groups_with_masters) {
    Status s = Status::Unsupported(std::string(Zero0OptimizerName(ms().optimizer_kind)) +
                                   " fp32 masters are not linked to params (zero/link.h)");
    return s.WithPath(ms().file);
  }
  for (const NamedTensor& m : ckpt_.zero0_masters) {
    auto it = module_index_.find(m.name);
    if (it == module_index_.end()) return Corrupt("fp32 master of " + m.name + ", which module lacks", ms().file, m.name);
    const TensorMeta& param = ms().module[it->second].tensor;
    if (param.shape != m.tensor.shape) {
      return Corrupt("fp32 master of " + m.name + " has shape " + torch::ShapeText(m.tensor.shape) + ", the param " +
                         torch::ShapeText(param.shape),
                     ms().file, m.name);
    }
    ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(m.tensor.shape, "param " + m.name, ms().file, m.name));
    ZF_TRY(CheckSource(m.tensor, n, "fp32 master of " + m.name, ms().file, m.name, Code::kCorrupt));
    std::vector<SourceSlice> slices;
    if (n) {
      slices.push_back(SourceSlice{SourceKind::kModelStates, 0, m.tensor.storage,
                                   static_cast<uint64_t>(m.tensor.storage_offset), n, m.tensor.dtype});
    }
    ZF_TRY(AddParam(NamedShape{m.name, m.tensor.shape}, std::move(slices), m.tensor.dtype));
  }
  return Status::OK();
}

// Universal: each recorded param from its zero/<name>/fp32.pt, the full
// tensor (TP = 1) flat or shaped, reshaped to the recorded shape.
Status Planner::PlanUniversalParams() {
  std::unordered_map<std::string_view, const UniversalParam*> by_name;
  for (const UniversalParam& u : ckpt_.universal_params) by_name.emplace(u.name, &u);
  std::unordered_set<std::string_view> used;
  for (const std::vector<NamedShape>& group : ms().param_shapes) {
    for (const NamedShape& p : group) {
      auto it = by_name.find(p.name);
      if (it == by_name.end()) {
        Status s = Status::NotFound("universal checkpoint lacks zero/" + p.name + "/fp32.pt for param " + p.name +
                                    " " + torch::ShapeText(p.shape));
        return s.WithPath(ms().file).WithRecord(p.name);
      }
      const UniversalParam& u = *it->second;
      used.insert(u.name);
      const std::string& file = ckpt_.param_files[u.file];
      ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(p.shape, "param " + p.name, ms().file, p.name));
      ZF_ASSIGN_OR_RETURN(uint64_t have, Numel(u.tensor.shape, "fp32 of " + p.name, file, p.name));
      if (have != n) {
        return Corrupt("fp32 of " + p.name + " has shape " + torch::ShapeText(u.tensor.shape) + " (" +
                           std::to_string(have) + " elements), the recorded shape " + torch::ShapeText(p.shape) +
                           " needs " + std::to_string(n) + " (a TP slice?)",
                       file, p.name);
      }
      if (!IsFloating(u.tensor.dtype)) return Corrupt("fp32 of " + p.name + " is not floating point", file, p.name);
      ZF_TRY(CheckSource(u.tensor, n, "fp32 of " + p.name, file, p.name, Code::kCorrupt));
      std::vector<SourceSlice> slices;
      if (n) {
        slices.push_back(SourceSlice{SourceKind::kParamFile, u.file, u.tensor.storage,
                                     static_cast<uint64_t>(u.tensor.storage_offset), n, u.tensor.dtype});
      }
      ZF_TRY(AddParam(p, std::move(slices), u.tensor.dtype));
    }
  }
  for (const UniversalParam& u : ckpt_.universal_params) {
    if (!used.count(u.name)) {
      return Corrupt("zero/" + u.name + "/fp32.pt names no param the model states record", ckpt_.param_files[u.file]);
    }
  }
  return Status::OK();
}

// A whole `module` tensor as one slice (none if empty).
Status Planner::AddFromModule(const std::string& name, TensorKind kind) {
  const TensorMeta& t = ms().module[module_index_.at(name)].tensor;
  ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(t.shape, std::string(TensorKindName(kind)) + " " + name, ms().file, name));
  ZF_TRY(CheckSource(t, n, std::string(TensorKindName(kind)) + " " + name + " in module", ms().file, name,
                     Code::kUnsupported));
  std::vector<SourceSlice> slices;
  if (n) slices.push_back(SourceSlice{SourceKind::kModelStates, 0, t.storage, static_cast<uint64_t>(t.storage_offset), n, t.dtype});
  output_index_.emplace(name, outputs_.size());
  outputs_.push_back(OutputTensor{name, kind, OutputDType(t.dtype, options_), t.shape, std::move(slices)});
  return Status::OK();
}

Status Planner::PlanBuffers() {
  for (const std::string& name : ms().buffer_names) {
    if (Known(name)) return Corrupt(name + " is listed as a buffer and as a param or twice", ms().file, name);
    if (!module_index_.count(name)) {
      return Corrupt("buffer_names lists " + name + ", which module lacks", ms().file, name);
    }
    ZF_TRY(AddFromModule(name, TensorKind::kBuffer));
  }
  for (const NamedTensor& t : ms().module) {
    if (!output_index_.count(t.name)) leftovers_.push_back(t.name);
  }
  return Status::OK();
}

Status Planner::PlanTies() {
  auto add = [this](const std::string& name, const std::string& owner) {
    tie_index_.emplace(name, ties_.size());
    ties_.push_back(Tie{name, owner});
  };
  if (ms().shared_params) {
    for (const SharedParam& sp : *ms().shared_params) {
      if (sp.name == sp.owner) return Corrupt("shared_params ties " + sp.name + " to itself", ms().file, sp.name);
      if (Known(sp.name)) {
        return Corrupt("shared_params ties " + sp.name + " to " + sp.owner +
                           ", but it is a trainable param, a buffer or tied twice",
                       ms().file, sp.name);
      }
      add(sp.name, sp.owner);
    }
    return Status::OK();
  }
  // No shared_params (older DeepSpeed): a leftover name is tied to a param
  // when its module tensor is the same view. Same storage alone proves
  // nothing: in ZeRO-1/2 every param is a view of one flat buffer.
  using ViewKey = std::tuple<std::string_view, int64_t, const std::vector<int64_t>*, const std::vector<int64_t>*>;
  struct Less {
    bool operator()(const ViewKey& a, const ViewKey& b) const {
      return std::tie(std::get<0>(a), std::get<1>(a), *std::get<2>(a), *std::get<3>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), *std::get<2>(b), *std::get<3>(b));
    }
  };
  auto key = [this](const std::string& name) {
    const TensorMeta& t = ms().module[module_index_.at(name)].tensor;
    return ViewKey{t.storage, t.storage_offset, &t.shape, &t.stride};
  };
  std::map<ViewKey, std::string, Less> owners;
  for (const OutputTensor& t : outputs_) {
    if (t.kind == TensorKind::kParam && module_index_.count(t.name)) owners.emplace(key(t.name), t.name);
  }
  std::unordered_set<std::string_view> frozen;
  if (ms().frozen_param_shapes) {
    for (const NamedShape& f : *ms().frozen_param_shapes) {
      frozen.insert(f.name);
      if (module_index_.count(f.name)) owners.emplace(key(f.name), f.name);
    }
  }
  for (const std::string& name : leftovers_) {
    if (frozen.count(name)) continue;
    auto it = owners.find(key(name));
    if (it != owners.end()) add(name, it->second);
  }
  return Status::OK();
}

Status Planner::PlanFrozen() {
  const bool exclude = options_.exclude_frozen;
  if (ms().frozen_param_shapes) {
    // name -> fragment, per model-states file (stage 3: per rank).
    std::vector<std::unordered_map<std::string_view, const TensorMeta*>> fragments(ckpt_.model_states.size());
    for (size_t r = 0; r < ckpt_.model_states.size(); ++r) {
      const ModelStates& m = ckpt_.model_states[r];
      if (!m.frozen_param_fragments) continue;
      for (const NamedTensor& t : *m.frozen_param_fragments) fragments[r].emplace(t.name, &t.tensor);
    }
    std::unordered_set<std::string_view> listed;
    for (const NamedShape& f : *ms().frozen_param_shapes) {
      if (Known(f.name) || !listed.insert(f.name).second) {
        return Corrupt("frozen_param_shapes names " + f.name + ", which is also a trainable param, a buffer, "
                                                               "tied or frozen twice",
                       ms().file, f.name);
      }
      if (exclude) continue;
      ZF_ASSIGN_OR_RETURN(uint64_t n, Numel(f.shape, "frozen param " + f.name, ms().file, f.name));
      std::vector<SourceSlice> slices;
      DType dtype = DType::kFloat32;
      if (stage_ == 3) {
        // Rank r's fragment is its ceil(numel / ws) piece; concatenate, cut.
        std::vector<Part> parts;
        uint64_t total = 0;
        for (uint32_t r = 0; r < ckpt_.model_states.size(); ++r) {
          const ModelStates& m = ckpt_.model_states[r];
          auto it = fragments[r].find(f.name);
          if (it == fragments[r].end()) {
            Status s = m.frozen_param_fragments
                           ? Status::Corrupt("frozen_param_fragments lacks " + f.name)
                           : Status::Unsupported("frozen_param_fragments is missing, frozen param " + f.name +
                                                 " has no values (--exclude-frozen leaves frozen params out)");
            return s.WithPath(m.file).WithRecord(f.name);
          }
          const TensorMeta& frag = *it->second;
          ZF_ASSIGN_OR_RETURN(uint64_t len, Numel(frag.shape, "fragment of " + f.name, m.file, f.name));
          ZF_TRY(CheckSource(frag, len, "fragment of frozen param " + f.name, m.file, f.name, Code::kCorrupt));
          total = io::CheckedAdd(total, len).value_or(UINT64_MAX);
          dtype = frag.dtype;
          parts.push_back(Part{r, &frag, len, std::nullopt});
        }
        if (total < n) {
          return Corrupt("frozen param " + f.name + " " + torch::ShapeText(f.shape) + " needs " + std::to_string(n) +
                             " elements, the ranks' fragments hold " + std::to_string(total),
                         ms().file, f.name);
        }
        EndToEnd flat(SourceKind::kModelStates, std::move(parts));
        if (n) flat.Take(0, n, &slices);
      } else {
        // Stage 2: the fragment is the whole tensor (without fragments, the
        // module entry is).
        const TensorMeta* frag = nullptr;
        if (ms().frozen_param_fragments) {
          auto it = fragments[0].find(f.name);
          if (it != fragments[0].end()) frag = it->second;
        } else if (module_index_.count(f.name)) {
          frag = &ms().module[module_index_.at(f.name)].tensor;
        }
        if (!frag) {
          return Corrupt("frozen param " + f.name + " is neither in frozen_param_fragments nor in module", ms().file,
                         f.name);
        }
        ZF_ASSIGN_OR_RETURN(uint64_t len, Numel(frag->shape, "fragment of " + f.name, ms().file, f.name));
        if (len != n) {
          return Corrupt("frozen param " + f.name + " has shape " + torch::ShapeText(f.shape) + " but its fragment has " +
                             torch::ShapeText(frag->shape),
                         ms().file, f.name);
        }
        ZF_TRY(CheckSource(*frag, len, "frozen param " + f.name, ms().file, f.name, Code::kUnsupported));
        if (n) {
          slices.push_back(SourceSlice{SourceKind::kModelStates, 0, frag->storage,
                                       static_cast<uint64_t>(frag->storage_offset), n, frag->dtype});
        }
        dtype = frag->dtype;
      }
      output_index_.emplace(f.name, outputs_.size());
      outputs_.push_back(OutputTensor{f.name, TensorKind::kFrozenParam, OutputDType(dtype, options_), f.shape,
                                      std::move(slices)});
    }
    for (const std::string& name : leftovers_) {
      if (!Known(name) && !listed.count(name)) {
        return Corrupt("module name " + name +
                           " is neither a trainable param (param_shapes), a buffer (buffer_names), a frozen param "
                           "(frozen_param_shapes) nor tied to a param",
                       ms().file, name);
      }
    }
    return Status::OK();
  }
  // Stage 1 and BF16_Optimizer record no frozen params: every name left is
  // one, and `module` holds its value. In stage 3 `module` holds zero-size
  // placeholders only, so the values are gone.
  for (const std::string& name : leftovers_) {
    if (Known(name)) continue;
    if (exclude) continue;
    if (stage_ == 3) {
      Status s = Status::Unsupported("stage 3 checkpoint without frozen_param_fragments: module name " + name +
                                     " is no trainable param, buffer or tie, and its values are not saved "
                                     "(--exclude-frozen leaves frozen params out)");
      return s.WithPath(ms().file).WithRecord(name);
    }
    ZF_TRY(AddFromModule(name, TensorKind::kFrozenParam));
  }
  return Status::OK();
}

// Every tie's owner is an output tensor; an owner that is itself tied is
// followed to its own owner. Ties to left-out frozen params are dropped.
Status Planner::ResolveTies() {
  std::vector<Tie> kept;
  for (const Tie& tie : ties_) {
    std::string owner = tie.owner;
    for (size_t hops = 0; !output_index_.count(owner); ++hops) {
      auto it = tie_index_.find(owner);
      if (it == tie_index_.end() || hops > ties_.size()) {
        owner.clear();
        break;
      }
      owner = ties_[it->second].owner;
    }
    if (owner.empty()) {
      if (options_.exclude_frozen) continue;  // tied to a frozen param left out
      return Corrupt("shared_params ties " + tie.name + " to " + tie.owner + ", which is not a param", ms().file,
                     tie.name);
    }
    kept.push_back(Tie{tie.name, owner});
  }
  ties_ = std::move(kept);
  tie_index_.clear();
  for (size_t i = 0; i < ties_.size(); ++i) tie_index_.emplace(ties_[i].name, i);
  return Status::OK();
}

void Planner::Order() {
  std::vector<bool> taken(outputs_.size(), false);
  std::vector<bool> tie_taken(ties_.size(), false);
  for (const NamedTensor& t : ms().module) {
    if (auto it = output_index_.find(t.name); it != output_index_.end()) {
      plan_.tensors.push_back(std::move(outputs_[it->second]));
      taken[it->second] = true;
    } else if (auto jt = tie_index_.find(t.name); jt != tie_index_.end()) {
      plan_.ties.push_back(ties_[jt->second]);
      tie_taken[jt->second] = true;
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!taken[i]) plan_.tensors.push_back(std::move(outputs_[i]));
  }
  for (size_t i = 0; i < ties_.size(); ++i) {
    if (!tie_taken[i]) plan_.ties.push_back(ties_[i]);
  }
}

Result<MergePlan> Planner::Run() {
  if (options_.float_dtype && !IsFloating(*options_.float_dtype)) {
    return Status::InvalidArgument("the output dtype must be floating point");
  }
  if (!ckpt_.model_states.empty()) ZF_TRY(CheckParallelism());
  ZF_TRY(CheckRanks());
  ZF_TRY(CheckModelStates());
  ZF_TRY(IndexModule());
  if (ckpt_.universal) {
    ZF_TRY(PlanUniversalParams());
  } else if (stage_ == 0) {
    ZF_TRY(PlanStage0Params());
  } else {
    ZF_TRY(DeriveParamShapes());
    ZF_TRY(stage_ == 3 ? PlanStage3Params() : PlanStage12Params());
  }
  ZF_TRY(PlanBuffers());
  ZF_TRY(PlanTies());  // before frozen params: a tied name is not a frozen one
  ZF_TRY(PlanFrozen());
  ZF_TRY(ResolveTies());
  plan_.world_size = world_size_;
  plan_.zero_stage = stage_;
  plan_.bf16_optimizer = bf16_optimizer_;
  plan_.universal = ckpt_.universal;
  Order();
  return std::move(plan_);
}

}  // namespace

Result<MergePlan> PlanMerge(const ZeroCheckpoint& ckpt, const PlanOptions& options) {
  return Planner(ckpt, options).Run();
}

}  // namespace zerofold::zero
