// The trainable params: where each one's elements lie in the ranks'
// partitions (stage 1/2 flat groups, stage 3 per-param partitions, stage 0
// fp32 masters, universal fp32.pt files).
#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "io/checked_math.h"
#include "torch/checkpoint.h"
#include "zero/planner.h"

namespace zerofold::zero::planning {

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

}  // namespace zerofold::zero::planning
