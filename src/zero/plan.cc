#include "zero/plan.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/checked_math.h"
#include "torch/checkpoint.h"
#include "zero/planner.h"

namespace zerofold::zero {

std::string_view TensorKindName(TensorKind kind) {
  switch (kind) {
    case TensorKind::kParam: return "param";
    case TensorKind::kFrozenParam: return "frozen param";
    case TensorKind::kBuffer: return "buffer";
  }
  return "?";
}

namespace planning {

Status Corrupt(std::string message, std::string_view file, std::string_view record) {
  Status s = Status::Corrupt(std::move(message));
  s.WithPath(file);
  if (!record.empty()) s.WithRecord(record);
  return s;
}

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

bool IsFloating(DType d) { return torch::Info(d).is_floating && d != DType::kFloat4E2M1FNx2; }

DType OutputDType(DType source, const PlanOptions& options) {
  if (!IsFloating(source)) return source;
  if (options.float_dtype) return *options.float_dtype;
  return source == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

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

}  // namespace planning

Result<MergePlan> PlanMerge(const ZeroCheckpoint& ckpt, const PlanOptions& options) {
  return planning::Planner(ckpt, options).Run();
}

}  // namespace zerofold::zero
