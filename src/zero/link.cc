#include "zero/link.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "io/checked_math.h"
#include "torch/cast.h"
#include "torch/checkpoint.h"

namespace zerofold::zero {
namespace {

using torch::DType;

constexpr size_t kOpen = static_cast<size_t>(-1);

// Elements compared per read.
constexpr uint64_t kChunkElements = uint64_t{1} << 16;

Status Fail(Status s, const ModelStates& m, std::string_view record) {
  s.WithPath(m.file);
  if (!record.empty()) s.WithRecord(record);
  return s;
}

uint64_t NumelOrZero(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    std::optional<uint64_t> next = d < 0 ? std::nullopt : io::CheckedMul<uint64_t>(n, static_cast<uint64_t>(d));
    if (!next) return 0;
    n = *next;
  }
  return n;
}

std::vector<int64_t> ContiguousStride(const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * std::max<int64_t>(shape[i], 1);
  return stride;
}

bool Contiguous(const TensorMeta& t) { return t.stride == ContiguousStride(t.shape); }

// A module param: its name and 16-bit tensor.
struct Param {
  const NamedTensor* entry;
  uint64_t numel;
};

// Module entries that are params: not buffers, and the first name of each
// view (a later name of the same view is a tie).
std::vector<Param> ModuleParams(const ModelStates& m) {
  std::unordered_set<std::string_view> buffers(m.buffer_names.begin(), m.buffer_names.end());
  std::set<std::tuple<std::string, int64_t, std::vector<int64_t>, std::vector<int64_t>>> views;
  std::vector<Param> out;
  for (const NamedTensor& t : m.module) {
    if (buffers.count(t.name) || !torch::Info(t.tensor.dtype).is_floating) continue;
    if (!views.emplace(t.tensor.storage, t.tensor.storage_offset, t.tensor.shape, t.tensor.stride).second) continue;
    out.push_back(Param{&t, NumelOrZero(t.tensor.shape)});
  }
  return out;
}

// True when the `count` master elements from `master_first` round to the
// param's saved values (NaN matches NaN).
Result<bool> RoundsTo(ElementReader& reader, const TensorMeta& master, uint64_t master_first, const TensorMeta& param,
                      uint64_t count) {
  const uint32_t in_size = torch::Info(master.dtype).itemsize;
  const uint32_t out_size = torch::Info(param.dtype).itemsize;
  if (!torch::IsCastable(master.dtype) || !torch::IsCastable(param.dtype)) return false;
  std::vector<std::byte> in, rounded, saved;
  torch::NanRule rule;
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min(kChunkElements, count - done);
    in.resize(n * in_size);
    rounded.resize(n * out_size);
    saved.resize(n * out_size);
    ZF_TRY(reader.Read(master, master_first + done, in));
    ZF_TRY(reader.Read(param, done, saved));
    ZF_TRY(torch::CastElements(master.dtype, param.dtype, in, rounded, rule));
    if (std::memcmp(rounded.data(), saved.data(), saved.size()) != 0) {
      // Equal but for NaN payloads is still equal.
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t a = 0, b = 0;
        std::memcpy(&a, rounded.data() + i * out_size, out_size);
        std::memcpy(&b, saved.data() + i * out_size, out_size);
        if (a == b) continue;
        uint32_t fa = 0, fb = 0;
        std::byte wa[4], wb[4];
        ZF_TRY(torch::CastElements(param.dtype, DType::kFloat32, std::span(rounded.data() + i * out_size, out_size),
                                   wa, rule));
        ZF_TRY(torch::CastElements(param.dtype, DType::kFloat32, std::span(saved.data() + i * out_size, out_size),
                                   wb, rule));
        std::memcpy(&fa, wa, 4);
        std::memcpy(&fb, wb, 4);
        auto is_nan = [](uint32_t f) { return (f & 0x7F800000u) == 0x7F800000u && (f & 0x007FFFFFu) != 0; };
        if (!(is_nan(fa) && is_nan(fb))) return false;
      }
    }
    done += n;
  }
  return true;
}

// One master to link: where its elements are and what fits it.
struct Master {
  std::string label;          // "fp32_groups[1][3]"
  const TensorMeta* flat = nullptr;
  std::vector<size_t> candidates;  // indexes into the params (unfused) or storages (fused)
};

std::string Names(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

std::string CandidateNames(const Master& mm, const std::function<std::string(size_t)>& name_of) {
  std::vector<std::string> names;
  for (size_t c : mm.candidates) names.push_back(name_of(c));
  return Names(names);
}

// Repeatedly settles masters with one candidate, striking that candidate
// from the others. Returns the chosen candidate per master (kOpen: open,
// listed in *open with its candidates; need_unique refuses instead).
Result<std::vector<size_t>> Settle(std::vector<Master>& masters, const ModelStates& m,
                                   const std::function<std::string(size_t)>& name_of, bool need_unique,
                                   std::vector<std::string>* open) {
  std::vector<size_t> chosen(masters.size(), kOpen);
  std::map<size_t, size_t> owner;  // candidate -> master
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < masters.size(); ++i) {
      if (chosen[i] != kOpen) continue;
      std::vector<size_t>& c = masters[i].candidates;
      c.erase(std::remove_if(c.begin(), c.end(), [&](size_t x) { return owner.count(x) != 0; }), c.end());
      if (c.empty()) {
        return Fail(Status::Corrupt("fp32 master " + masters[i].label +
                                    " fits no param of module (none left of its size whose saved value it rounds to)"),
                    m, masters[i].label);
      }
      if (c.size() == 1) {
        chosen[i] = c[0];
        owner.emplace(c[0], i);
        progress = true;
      }
    }
  }
  for (size_t i = 0; i < masters.size(); ++i) {
    if (chosen[i] != kOpen) continue;
    if (!need_unique) {
      open->push_back(masters[i].label + ": " + CandidateNames(masters[i], name_of));
      continue;
    }
    return Fail(Status::Unsupported("fp32 master " + masters[i].label + " fits " +
                                    std::to_string(masters[i].candidates.size()) +
                                    " params by shape and saved value: " + CandidateNames(masters[i], name_of) +
                                    "; the checkpoint does not record which (not guessed)"),
                m, masters[i].label);
  }
  return chosen;
}

Result<Zero0Link> LinkUnfused(const ModelStates& m, ElementReader* reader) {
  std::vector<Param> params = ModuleParams(m);
  std::vector<Master> masters;
  for (size_t g = 0; g < m.optimizer_fp32_groups.size(); ++g) {
    for (size_t i = 0; i < m.optimizer_fp32_groups[g].size(); ++i) {
      const TensorMeta& t = m.optimizer_fp32_groups[g][i];
      Master mm;
      mm.label = "fp32_groups[" + std::to_string(g) + "][" + std::to_string(i) + "] " + torch::ShapeText(t.shape);
      mm.flat = &t;
      if (!Contiguous(t)) {
        return Fail(Status::Corrupt("fp32 master " + mm.label + " is not contiguous"), m, mm.label);
      }
      for (size_t p = 0; p < params.size(); ++p) {
        const TensorMeta& pt = params[p].entry->tensor;
        if (pt.shape != t.shape || !Contiguous(pt)) continue;
        if (reader) {
          ZF_ASSIGN_OR_RETURN(bool fits, RoundsTo(*reader, t, 0, pt, params[p].numel));
          if (!fits) continue;
        }
        mm.candidates.push_back(p);
      }
      masters.push_back(std::move(mm));
    }
  }
  auto name_of = [&](size_t p) { return params[p].entry->name; };
  Zero0Link link;
  ZF_ASSIGN_OR_RETURN(std::vector<size_t> chosen, Settle(masters, m, name_of, reader != nullptr, &link.by_value));
  for (size_t i = 0; i < masters.size(); ++i) {
    if (chosen[i] == kOpen) continue;
    link.masters.push_back(NamedTensor{params[chosen[i]].entry->name, *masters[i].flat});
  }
  return link;
}

// FP16_Optimizer: a module storage whose param views tile [0, total).
struct FlatStorage {
  std::string key;
  std::vector<const Param*> views;  // by offset
  uint64_t total = 0;
};

Result<Zero0Link> LinkFused(const ModelStates& m, ElementReader* reader) {
  std::vector<Param> params = ModuleParams(m);
  std::map<std::string, FlatStorage> by_key;
  for (const Param& p : params) {
    FlatStorage& s = by_key[p.entry->tensor.storage];
    s.key = p.entry->tensor.storage;
    s.views.push_back(&p);
  }
  std::vector<FlatStorage> storages;
  for (auto& [key, s] : by_key) {
    std::sort(s.views.begin(), s.views.end(), [](const Param* a, const Param* b) {
      return a->entry->tensor.storage_offset < b->entry->tensor.storage_offset;
    });
    uint64_t at = 0;
    bool tiles = true;
    for (const Param* p : s.views) {
      if (!Contiguous(p->entry->tensor) || p->entry->tensor.storage_offset != static_cast<int64_t>(at)) tiles = false;
      at += p->numel;
    }
    if (!tiles) continue;
    s.total = at;
    storages.push_back(std::move(s));
  }
  std::vector<Master> masters;
  for (size_t g = 0; g < m.optimizer_fp32_groups.size(); ++g) {
    if (m.optimizer_fp32_groups[g].size() != 1) {
      return Fail(Status::Corrupt("fp32_groups_flat[" + std::to_string(g) + "] is not one tensor"), m, "optimizer");
    }
    const TensorMeta& t = m.optimizer_fp32_groups[g][0];
    Master mm;
    mm.label = "fp32_groups_flat[" + std::to_string(g) + "] " + torch::ShapeText(t.shape);
    mm.flat = &t;
    if (t.shape.size() != 1 || !Contiguous(t)) {
      return Fail(Status::Corrupt("fp32 master " + mm.label + " is not a flat 1-D tensor"), m, mm.label);
    }
    for (size_t s = 0; s < storages.size(); ++s) {
      if (storages[s].total != static_cast<uint64_t>(t.shape[0])) continue;
      bool fits = true;
      if (reader) {
        for (const Param* p : storages[s].views) {
          ZF_ASSIGN_OR_RETURN(fits, RoundsTo(*reader, t, static_cast<uint64_t>(p->entry->tensor.storage_offset),
                                             p->entry->tensor, p->numel));
          if (!fits) break;
        }
      }
      if (fits) mm.candidates.push_back(s);
    }
    masters.push_back(std::move(mm));
  }
  auto name_of = [&](size_t s) {
    std::vector<std::string> names;
    for (const Param* p : storages[s].views) names.push_back(p->entry->name);
    return "the group of " + Names(names);
  };
  Zero0Link link;
  ZF_ASSIGN_OR_RETURN(std::vector<size_t> chosen, Settle(masters, m, name_of, reader != nullptr, &link.by_value));
  for (size_t i = 0; i < masters.size(); ++i) {
    if (chosen[i] == kOpen) continue;
    const TensorMeta& flat = *masters[i].flat;
    for (const Param* p : storages[chosen[i]].views) {
      const TensorMeta& pt = p->entry->tensor;
      TensorMeta t{flat.dtype, pt.shape, ContiguousStride(pt.shape), flat.storage,
                   flat.storage_offset + pt.storage_offset};
      link.masters.push_back(NamedTensor{p->entry->name, std::move(t)});
    }
  }
  return link;
}

}  // namespace

Result<Zero0Link> LinkZero0Masters(const ModelStates& m, ElementReader* reader) {
  switch (m.optimizer_kind) {
    case Zero0Optimizer::kFp16Fused: return LinkFused(m, reader);
    case Zero0Optimizer::kFp16Unfused: return LinkUnfused(m, reader);
    default: break;
  }
  return Fail(Status::InvalidArgument("no FP16_Optimizer or FP16_UnfusedOptimizer masters to link"), m, "optimizer");
}

}  // namespace zerofold::zero
