// The tensors taken from the model states' `module`: buffers, frozen
// params (or their stage-3 fragments) and ties (shared_params).
#include <map>
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

}  // namespace zerofold::zero::planning
