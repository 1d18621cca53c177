#include "zero/files.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace zerofold::zero {
namespace {

// File name parts, as DeepSpeed's engine names them (_get_ckpt_name,
// _get_zero_ckpt_name, _get_expert_ckpt_name, pipeline layer files).
constexpr std::string_view kModelStatesSuffix = "_model_states.pt";
constexpr std::string_view kOptimStatesSuffix = "_optim_states.pt";
constexpr std::string_view kBf16Prefix = "bf16_";
constexpr std::string_view kZeroPpRank = "zero_pp_rank_";
constexpr std::string_view kMpRank = "mp_rank_";
constexpr std::string_view kLayerPrefix = "layer_";
constexpr std::string_view kExpertParallel = "expp_rank_";
constexpr std::string_view kExpert = "expert_";
constexpr size_t kMaxRankDigits = 9;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool Consume(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// A decimal number at the start of *s (at most kMaxRankDigits digits).
std::optional<uint32_t> ConsumeNumber(std::string_view* s) {
  size_t n = 0;
  uint32_t value = 0;
  while (n < s->size() && (*s)[n] >= '0' && (*s)[n] <= '9') {
    if (n == kMaxRankDigits) return std::nullopt;
    value = value * 10 + static_cast<uint32_t>((*s)[n] - '0');
    ++n;
  }
  if (n == 0) return std::nullopt;
  s->remove_prefix(n);
  return value;
}

struct Parsed {
  enum class Kind { kModelStates, kRankModelStates, kOptimStates } kind;
  uint32_t rank = 0;     // zero_pp_rank_R
  uint32_t mp_rank = 0;  // mp_rank_XX
};

// "[bf16_]zero_pp_rank_R_mp_rank_XX<suffix>" or "mp_rank_XX<suffix>".
std::optional<Parsed> Parse(std::string_view name) {
  std::string_view rest = name;
  Parsed p;
  bool optim = EndsWith(rest, kOptimStatesSuffix);
  if (!optim && !EndsWith(rest, kModelStatesSuffix)) return std::nullopt;
  rest.remove_suffix(optim ? kOptimStatesSuffix.size() : kModelStatesSuffix.size());
  bool bf16 = optim && Consume(&rest, kBf16Prefix);
  bool zero = Consume(&rest, kZeroPpRank);
  if (zero) {
    std::optional<uint32_t> r = ConsumeNumber(&rest);
    if (!r || !Consume(&rest, "_")) return std::nullopt;
    p.rank = *r;
  }
  if (!Consume(&rest, kMpRank)) return std::nullopt;
  std::optional<uint32_t> mp = ConsumeNumber(&rest);
  if (!mp || !rest.empty()) return std::nullopt;
  p.mp_rank = *mp;
  if (optim) {
    if (!zero) return std::nullopt;
    p.kind = Parsed::Kind::kOptimStates;
  } else {
    if (bf16) return std::nullopt;
    p.kind = zero ? Parsed::Kind::kRankModelStates : Parsed::Kind::kModelStates;
  }
  return p;
}

// Ranks 0..n-1, each once, sorted into `out`.
Status Collect(std::vector<std::pair<uint32_t, std::string>> found, std::string_view what,
               std::vector<std::string>* out) {
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && found[i].first == found[i - 1].first) {
      Status s = Status::Corrupt("two " + std::string(what) + " files for rank " + std::to_string(found[i].first) +
                                 ": " + found[i - 1].second + " and " + found[i].second);
      return s.WithPath(found[i].second);
    }
    if (found[i].first != i) {
      std::string ranks;
      for (size_t j = 0; j < found.size(); ++j) ranks += (j ? ", " : "") + std::to_string(found[j].first);
      return Status::NotFound(std::string(what) + " of rank " + std::to_string(i) + " missing: found ranks " + ranks);
    }
    out->push_back(found[i].second);
  }
  return Status::OK();
}

Status Refuse(std::string why, std::string_view name) {
  Status s = Status::Unsupported(std::move(why));
  return s.WithPath(name);
}

}  // namespace

Result<TagFiles> ClassifyTagFiles(std::span<const std::string> names) {
  TagFiles files;
  std::vector<std::pair<uint32_t, std::string>> optim;
  std::vector<std::pair<uint32_t, std::string>> rank_models;
  for (const std::string& name : names) {
    std::string_view n = name;
    // Pipeline files end in "-model_states.pt", so match the suffix without
    // its separator here.
    if (!EndsWith(n, kModelStatesSuffix.substr(1)) && !EndsWith(n, kOptimStatesSuffix.substr(1))) continue;
    if (n.find(kExpertParallel) != std::string_view::npos || n.find(kExpert) != std::string_view::npos) {
      return Refuse("MoE checkpoint (" + name + "): expert files are not supported", name);
    }
    if (n.substr(0, kLayerPrefix.size()) == kLayerPrefix) {
      return Refuse("pipeline-parallel checkpoint (" + name + "): layer_* files are not supported", name);
    }
    std::optional<Parsed> p = Parse(n);
    if (!p) return Refuse("unrecognized DeepSpeed states file " + name, name);
    if (p->mp_rank != 0) {
      return Refuse("tensor-parallel checkpoint (" + name + "): only mp_rank_00 is supported", name);
    }
    switch (p->kind) {
      case Parsed::Kind::kModelStates:
        files.model_states = name;
        break;
      case Parsed::Kind::kRankModelStates:
        rank_models.emplace_back(p->rank, name);
        break;
      case Parsed::Kind::kOptimStates:
        optim.emplace_back(p->rank, name);
        break;
    }
  }
  ZF_TRY(Collect(std::move(optim), "optim states", &files.optim_states));
  ZF_TRY(Collect(std::move(rank_models), "model states", &files.rank_model_states));
  if (files.model_states.empty() && files.rank_model_states.empty()) {
    return Status::NotFound("no model states file (mp_rank_00_model_states.pt or "
                            "zero_pp_rank_0_mp_rank_00_model_states.pt) among " +
                            std::to_string(names.size()) + " files");
  }
  return files;
}

}  // namespace zerofold::zero
