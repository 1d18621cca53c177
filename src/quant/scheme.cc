#include "quant/scheme.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "quant/elements.h"

namespace zerofold::quant {

namespace {

using safetensors::Dtype;

// The names of a quantized weight's other tensors.
constexpr std::string_view kScaleSuffixes[] = {
    ".weight_scale_inv", ".weight_scale", ".weight_scale_2", ".weight_global_scale",
    ".weight_zero_point", ".weight_shape", ".weight_g_idx", "_scales"};

std::string Dims(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b + (a % b != 0); }

uint64_t Numel(std::span<const uint64_t> shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// How a checkpoint's config says its weights were quantized: what the
// names alone cannot tell.
struct Params {
  bool known = false;        // from a config (else guessed from names)
  std::string format;        // compressed-tensors format of the group
  uint32_t bits = 0;
  std::string strategy;      // tensor, channel, group, block
  uint64_t group_size = 0;
  uint64_t block_rows = 0, block_cols = 0;
  bool actorder = false;
  bool symmetric = true;
};

// The scale grid of a strategy over rows x cols.
struct Grid {
  uint64_t block_rows = 1, block_cols = 1;
};

class Planner {
 public:
  Planner(const json::Value* config, std::span<const SourceTensor> tensors, std::span<const std::string> files)
      : config_(config), tensors_(tensors), files_(files) {
    for (uint32_t i = 0; i < tensors.size(); ++i) by_name_.emplace(tensors[i].name, i);
  }

  Result<Plan> Run() {
    ZF_TRY(ReadMethod());
    used_.assign(tensors_.size(), false);
    std::vector<std::optional<uint32_t>> group_at(tensors_.size());  // weight tensor -> group
    for (uint32_t i = 0; i < tensors_.size(); ++i) {
      if (used_[i]) continue;
      ZF_ASSIGN_OR_RETURN(std::optional<Group> g, Recognize(i));
      if (!g) continue;
      for (uint32_t m : g->members) used_[m] = true;
      if (std::find(plan_.schemes.begin(), plan_.schemes.end(), g->scheme) == plan_.schemes.end())
        plan_.schemes.push_back(g->scheme);
      group_at[g->weight] = static_cast<uint32_t>(plan_.groups.size());
      plan_.groups.push_back(std::move(*g));
    }
    // Scales no weight claimed.
    for (uint32_t i = 0; i < tensors_.size(); ++i) {
      if (used_[i]) continue;
      for (std::string_view suffix : kScaleSuffixes)
        if (EndsWith(tensors_[i].name, suffix))
          return Bad(i, "is a quantization tensor (" + std::string(suffix.substr(1)) +
                            ") whose weight is missing or not quantized");
    }
    for (uint32_t i = 0; i < tensors_.size(); ++i) {
      if (group_at[i]) plan_.items.push_back({true, *group_at[i]});
      else if (!used_[i]) plan_.items.push_back({false, i});
    }
    return std::move(plan_);
  }

 private:
  Status Bad(uint32_t t, std::string message) const {
    return Status::Corrupt(std::move(message)).WithRecord(tensors_[t].name).WithPath(files_[tensors_[t].file]);
  }
  Status NeedFolder(uint32_t t, const std::string& what) const {
    return Status::InvalidArgument("the tensor names cannot decide " + what +
                                   ": pass the Hugging Face folder (its config.json's quantization_config says it)")
        .WithRecord(tensors_[t].name)
        .WithPath(files_[tensors_[t].file]);
  }

  std::optional<uint32_t> Find(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }

  Status ReadMethod() {
    if (config_ == nullptr) return Status::OK();
    const json::Value* m = config_->Find("quant_method");
    if (m == nullptr || !m->is_string())
      return Status::Unsupported("config.json's quantization_config has no quant_method");
    plan_.method = m->string();
    static constexpr std::string_view kKnown[] = {"fp8", "mxfp4", "modelopt", "compressed-tensors"};
    if (std::find(std::begin(kKnown), std::end(kKnown), plan_.method) == std::end(kKnown))
      return Status::Unsupported("quant_method '" + plan_.method +
                                 "' is not one --dequantize decodes (fp8, mxfp4, modelopt, compressed-tensors)");
    if (plan_.method == "fp8") {
      const json::Value* b = config_->Find("weight_block_size");
      if (b == nullptr || !b->is_array() || b->array().size() != 2 || !b->array()[0].AsUint64() ||
          !b->array()[1].AsUint64() || *b->array()[0].AsUint64() == 0 || *b->array()[1].AsUint64() == 0)
        return Status::Unsupported("quant_method 'fp8' without a weight_block_size [rows, cols] is not decoded");
      fp8_block_ = {*b->array()[0].AsUint64(), *b->array()[1].AsUint64()};
    }
    if (plan_.method == "modelopt") {
      const json::Value* algo = config_->Find("quant_algo");
      std::string a = algo != nullptr && algo->is_string() ? algo->string() : "";
      if (a != "NVFP4" && a != "FP8" && a != "MIXED_PRECISION")
        return Status::Unsupported("modelopt quant_algo '" + a + "' is not decoded (NVFP4, FP8)");
      if (const json::Value* g = config_->Find("group_size"); g != nullptr && g->AsUint64() && *g->AsUint64() != 16)
        return Status::Unsupported("modelopt NVFP4 with group_size " + g->number_text() + " (not 16)");
    }
    return Status::OK();
  }

  // The scheme `s` is one the config's method stores weights in.
  Status Allowed(uint32_t t, Scheme s) const {
    if (plan_.method.empty()) return Status::OK();
    const std::string& m = plan_.method;
    const bool ok = (m == "fp8" && (s == Scheme::kFp8Block || s == Scheme::kFp4E8M0)) ||
                    (m == "mxfp4" && s == Scheme::kMxfp4) ||
                    (m == "modelopt" && (s == Scheme::kNvfp4 || s == Scheme::kFp8)) ||
                    (m == "compressed-tensors" && (s == Scheme::kNvfp4CT || s == Scheme::kIntPacked ||
                                                   s == Scheme::kFp8 || s == Scheme::kInt8));
    if (ok) return Status::OK();
    return Bad(t, std::string("is stored as ") + SchemeName(s) + ", which quant_method '" + m + "' does not write");
  }

  // compressed-tensors: the config group whose targets name `module`.
  Result<Params> CompressedTensorsParams(uint32_t t, const std::string& module) const {
    Params p;
    if (config_ == nullptr || plan_.method != "compressed-tensors") return p;
    const json::Value* groups = config_->Find("config_groups");
    if (groups == nullptr || !groups->is_object() || groups->members().empty())
      return Status::Unsupported("compressed-tensors quantization_config has no config_groups");
    if (const json::Value* ignore = config_->Find("ignore"); ignore != nullptr)
      for (const json::Value& pattern : ignore->array())
        if (Matches(pattern.string(), module))
          return Bad(t, "is quantized, but its module " + module + " is in quantization_config's ignore list");
    const json::Value* chosen = nullptr;
    const json::Value* by_class = nullptr;  // a group targeting a class ("Linear"): any module
    for (const json::Member& g : groups->members()) {
      const json::Value* targets = g.value.Find("targets");
      if (targets == nullptr) continue;
      for (const json::Value& target : targets->array()) {
        const std::string& text = target.string();
        if (text.rfind("re:", 0) != 0 && text.find('.') == std::string::npos && !text.empty() &&
            std::isupper(static_cast<unsigned char>(text[0]))) {
          if (by_class == nullptr) by_class = &g.value;
        } else if (chosen == nullptr && Matches(text, module)) {
          chosen = &g.value;
        }
      }
    }
    if (chosen == nullptr) chosen = by_class;
    if (chosen == nullptr) return Bad(t, "is quantized, but no config_groups entry targets its module " + module);
    p.known = true;
    const json::Value* format = chosen->Find("format");
    if (format == nullptr || !format->is_string()) format = config_->Find("format");
    p.format = format != nullptr && format->is_string() ? format->string() : "";
    const json::Value* w = chosen->Find("weights");
    if (w == nullptr || !w->is_object()) return Bad(t, "its config group has no weights entry");
    if (const json::Value* b = w->Find("num_bits"); b != nullptr && b->AsUint64()) p.bits = static_cast<uint32_t>(*b->AsUint64());
    if (const json::Value* s = w->Find("strategy"); s != nullptr) p.strategy = s->string();
    if (const json::Value* g = w->Find("group_size"); g != nullptr && g->AsUint64()) p.group_size = *g->AsUint64();
    if (const json::Value* b = w->Find("block_structure"); b != nullptr && b->array().size() == 2 &&
                                                          b->array()[0].AsUint64() && b->array()[1].AsUint64()) {
      p.block_rows = *b->array()[0].AsUint64();
      p.block_cols = *b->array()[1].AsUint64();
    }
    if (const json::Value* a = w->Find("actorder"); a != nullptr && a->is_string() && a->string() == "group")
      p.actorder = true;
    if (const json::Value* y = w->Find("symmetric"); y != nullptr && y->is_bool()) p.symmetric = y->boolean();
    return p;
  }

  // compressed-tensors' match_name: "re:" a regular expression matched at
  // the start of the name, else the name itself.
  static bool Matches(const std::string& pattern, const std::string& module) {
    if (pattern.rfind("re:", 0) == 0) {
      try {
        return std::regex_search(module, std::regex(pattern.substr(3)), std::regex_constants::match_continuous);
      } catch (const std::regex_error&) {
        return false;
      }
    }
    return pattern == module;
  }

  // The grid of a strategy; kUnsupported for one this does not know.
  Result<Grid> StrategyGrid(uint32_t t, const Params& p, uint64_t rows, uint64_t cols) const {
    if (p.strategy == "tensor") return Grid{std::max<uint64_t>(rows, 1), std::max<uint64_t>(cols, 1)};
    if (p.strategy == "channel") return Grid{1, std::max<uint64_t>(cols, 1)};
    if (p.strategy == "group" || p.strategy == "tensor_group") {
      if (p.group_size == 0) return Bad(t, "its config group has strategy group and no group_size");
      return Grid{1, p.group_size};
    }
    if (p.strategy == "block") {
      if (p.block_rows == 0 || p.block_cols == 0)
        return Bad(t, "its config group has strategy block and no block_structure of two positive sizes");
      return Grid{p.block_rows, p.block_cols};
    }
    return Status::Unsupported("weights strategy '" + p.strategy + "' is not decoded")
        .WithRecord(tensors_[t].name)
        .WithPath(files_[tensors_[t].file]);
  }

  // Checks the scale tensor `s` against the grid over the weight whose
  // leading (folded) dimensions are `lead` and last is `cols`; sets the
  // group's grid.
  Status CheckScale(Group& g, uint32_t s, std::span<const uint64_t> lead, uint64_t cols, Grid grid,
                    bool accept_scalar) const {
    const SourceTensor& st = tensors_[s];
    if (!ScaleItemSize(st.dtype) || st.dtype == Dtype::I64 || st.dtype == Dtype::I32)
      return Bad(s, "has dtype " + std::string(safetensors::DtypeCode(st.dtype)) + ", not a scale's");
    g.block_rows = grid.block_rows;
    g.block_cols = grid.block_cols;
    const uint64_t rows = g.rows;
    std::vector<uint64_t> want;
    if (grid.block_rows >= rows && grid.block_cols >= cols && accept_scalar) {
      if (Numel(st.shape) == 1) {
        g.block_rows = std::max<uint64_t>(rows, 1);
        g.block_cols = std::max<uint64_t>(cols, 1);
        g.scale_cols = 1;
        return Status::OK();
      }
      want = {1};
    } else if (grid.block_rows == 1) {
      want.assign(lead.begin(), lead.end());
      want.push_back(CeilDiv(cols, grid.block_cols));
    } else {
      if (lead.size() != 1)
        return Bad(g.weight, "is of rank " + std::to_string(lead.size() + 1) + "; block scales need rank 2");
      want = {CeilDiv(rows, grid.block_rows), CeilDiv(cols, grid.block_cols)};
    }
    g.scale_cols = want.back();
    if (st.shape != want)
      return Bad(s, "has shape " + Dims(st.shape) + ", not " + Dims(want) + " for weight " + tensors_[g.weight].name +
                        " of " + std::to_string(rows) + " x " + std::to_string(cols) + " elements in blocks of " +
                        std::to_string(grid.block_rows) + " x " + std::to_string(grid.block_cols));
    return Status::OK();
  }

  Status NeedDtype(uint32_t t, std::initializer_list<Dtype> ok, const char* role) const {
    for (Dtype d : ok)
      if (tensors_[t].dtype == d) return Status::OK();
    std::string names;
    for (Dtype d : ok) names += (names.empty() ? "" : " or ") + std::string(safetensors::DtypeCode(d));
    return Bad(t, std::string("is the ") + role + " and has dtype " +
                      std::string(safetensors::DtypeCode(tensors_[t].dtype)) + ", not " + names);
  }

  Status NeedRank(uint32_t t, size_t min_rank) const {
    if (tensors_[t].shape.size() >= min_rank) return Status::OK();
    return Bad(t, "has shape " + Dims(tensors_[t].shape) + "; a quantized weight has rank " +
                      std::to_string(min_rank) + " or more");
  }

  // Fills rows/cols/shape of a weight with `cols` last and leading dims `lead`.
  static void SetMatrix(Group& g, std::span<const uint64_t> lead, uint64_t cols) {
    g.rows = Numel(lead);
    g.cols = cols;
    g.shape.assign(lead.begin(), lead.end());
    g.shape.push_back(cols);
  }

  Result<std::optional<Group>> Recognize(uint32_t i) {
    const SourceTensor& t = tensors_[i];
    const std::string& name = t.name;
    Group g;
    g.weight = i;
    g.members.push_back(i);
    auto claim = [&](const std::string& n) -> std::optional<uint32_t> {
      std::optional<uint32_t> k = Find(n);
      if (k) g.members.push_back(*k);
      return k;
    };
    if (EndsWith(name, "_blocks")) {  // gpt-oss MXFP4
      const std::string base = name.substr(0, name.size() - 7);
      std::optional<uint32_t> s = Find(base + "_scales");
      if (!s) return Bad(i, "is MXFP4 blocks without " + base + "_scales");
      ZF_TRY(Allowed(i, Scheme::kMxfp4));
      g.scheme = Scheme::kMxfp4;
      g.members.push_back(*s);
      ZF_TRY(NeedDtype(i, {Dtype::U8}, "MXFP4 blocks"));
      ZF_TRY(NeedDtype(*s, {Dtype::U8, Dtype::F8_E8M0}, "MXFP4 scales"));
      if (t.shape.size() != 4 || t.shape[3] != 16)
        return Bad(i, "has shape " + Dims(t.shape) + ", not [experts, rows, groups, 16] (gpt-oss MXFP4 blocks)");
      const std::vector<uint64_t> want = {t.shape[0], t.shape[1], t.shape[2]};
      if (tensors_[*s].shape != want)
        return Bad(*s, "has shape " + Dims(tensors_[*s].shape) + ", not " + Dims(want) + " for blocks " + name);
      g.name = base;
      g.coding = Coding::kE2M1;
      g.scale = *s;
      g.e8m0_scale = true;
      g.experts = t.shape[0];
      g.rows = t.shape[0] * t.shape[1];
      g.cols = t.shape[2] * 32;
      g.block_rows = 1;
      g.block_cols = 32;
      g.scale_cols = t.shape[2];
      g.transpose = true;
      g.shape = {t.shape[0], g.cols, t.shape[1]};
      return std::optional<Group>(std::move(g));
    }
    if (EndsWith(name, ".weight_packed")) return RecognizePacked(i, std::move(g));
    if (!EndsWith(name, ".weight")) return std::optional<Group>();
    const std::string module = name.substr(0, name.size() - 7);
    if (t.dtype == Dtype::I8 && Find(module + ".scale")) {  // DeepSeek-V4 FP4 experts
      const uint32_t s = *claim(module + ".scale");
      ZF_TRY(Allowed(i, Scheme::kFp4E8M0));
      ZF_TRY(NeedRank(i, 2));
      ZF_TRY(NeedDtype(s, {Dtype::F8_E8M0, Dtype::U8}, "E8M0 scale"));
      g.scheme = Scheme::kFp4E8M0;
      g.name = name;
      g.coding = Coding::kE2M1;
      g.e8m0_scale = true;
      g.scale = s;
      std::span<const uint64_t> lead(t.shape.data(), t.shape.size() - 1);
      SetMatrix(g, lead, t.shape.back() * 2);
      ZF_TRY(CheckScale(g, s, lead, g.cols, Grid{1, 32}, false));
      return std::optional<Group>(std::move(g));
    }
    if (t.dtype == Dtype::F8_E4M3 || t.dtype == Dtype::I8) {
      const bool fp8 = t.dtype == Dtype::F8_E4M3;
      g.name = name;
      g.coding = fp8 ? Coding::kE4M3 : Coding::kInt8;
      ZF_TRY(NeedRank(i, 2));
      std::span<const uint64_t> lead(t.shape.data(), t.shape.size() - 1);
      SetMatrix(g, lead, t.shape.back());
      std::optional<uint32_t> block_scale;
      if (fp8) block_scale = claim(module + ".weight_scale_inv");
      if (fp8 && !block_scale) block_scale = claim(module + ".scale");  // DeepSeek-V4: E8M0, 128 x 128
      if (block_scale) {
        ZF_TRY(Allowed(i, Scheme::kFp8Block));
        g.scheme = Scheme::kFp8Block;
        g.scale = *block_scale;
        Grid grid{128, 128};  // DeepSeek-V3's config: "weight_block_size": [128, 128]
        if (fp8_block_) grid = {fp8_block_->first, fp8_block_->second};
        Status st = CheckScale(g, *block_scale, lead, g.cols, grid, false);
        if (!st.ok() && !fp8_block_)
          return NeedFolder(*block_scale, "the block size (its shape is not that of 128 x 128 blocks)");
        ZF_TRY(st);
        return std::optional<Group>(std::move(g));
      }
      std::optional<uint32_t> s = claim(module + ".weight_scale");
      if (!s) {
        if (!fp8) return std::optional<Group>();  // an int8 tensor of its own
        return Bad(i, "is F8_E4M3 without " + module + ".weight_scale_inv, " + module + ".scale or " + module +
                          ".weight_scale");
      }
      const Scheme scheme = fp8 ? Scheme::kFp8 : Scheme::kInt8;
      ZF_TRY(Allowed(i, scheme));
      g.scheme = scheme;
      g.scale = *s;
      claim(module + ".input_scale");
      claim(module + ".input_zero_point");
      ZF_ASSIGN_OR_RETURN(Params p, CompressedTensorsParams(i, module));
      std::optional<uint32_t> z;
      if (!fp8) z = claim(module + ".weight_zero_point");
      if (p.known) {
        const char* format = fp8 ? "float-quantized" : "int-quantized";
        if (p.format != format && p.format != "naive-quantized" && !p.format.empty())
          return Status::Unsupported("compressed-tensors format '" + p.format + "' for an " +
                                     std::string(safetensors::DtypeCode(t.dtype)) + " weight is not decoded")
              .WithRecord(name).WithPath(files_[t.file]);
        ZF_ASSIGN_OR_RETURN(Grid grid, StrategyGrid(i, p, g.rows, g.cols));
        ZF_TRY(CheckScale(g, *s, lead, g.cols, grid, p.strategy == "tensor"));
        if (!fp8 && !p.symmetric && !z) return Bad(i, "is asymmetric (its config group) without " + module + ".weight_zero_point");
      } else {
        // Names only (or ModelOpt FP8): a per-tensor or per-row scale.
        const SourceTensor& st = tensors_[*s];
        const bool per_row = st.shape.size() == t.shape.size() && st.shape.back() == 1;
        if (Numel(st.shape) != 1 && !per_row) return NeedFolder(*s, "how the scale's blocks cover the weight");
        ZF_TRY(CheckScale(g, *s, lead, g.cols, per_row ? Grid{1, g.cols} : Grid{g.rows, g.cols}, !per_row));
      }
      if (z.has_value()) {
        const uint32_t zi = z.value_or(0);
        const SourceTensor& zt = tensors_[zi];
        if (!ScaleItemSize(zt.dtype) || Numel(zt.shape) != Numel(tensors_[*s].shape))
          return Bad(zi, "has shape " + Dims(zt.shape) + ", not the scale's " + Dims(tensors_[*s].shape));
        g.zero_point = zi;
      }
      return std::optional<Group>(std::move(g));
    }
    // ModelOpt NVFP4: a U8 weight beside F8_E4M3 scales and a weight_scale_2.
    std::optional<uint32_t> s = Find(module + ".weight_scale");
    std::optional<uint32_t> s2 = Find(module + ".weight_scale_2");
    if (t.dtype != Dtype::U8 || !s || !s2) return std::optional<Group>();
    ZF_TRY(Allowed(i, Scheme::kNvfp4));
    g.scheme = Scheme::kNvfp4;
    g.members.push_back(*s);
    g.members.push_back(*s2);
    claim(module + ".input_scale");
    g.name = name;
    g.global_scale = *s2;
    return Fp4Group(std::move(g), *s);
  }

  // NVFP4 (both conventions): E2M1 pairs in U8, F8_E4M3 scales per 16.
  Result<std::optional<Group>> Fp4Group(Group g, uint32_t s) {
    const uint32_t i = g.weight;
    const SourceTensor& t = tensors_[i];
    ZF_TRY(NeedRank(i, 2));
    ZF_TRY(NeedDtype(s, {Dtype::F8_E4M3}, "NVFP4 scale"));
    ZF_TRY(NeedDtype(*g.global_scale, {Dtype::F32}, "NVFP4 global scale"));
    if (Numel(tensors_[*g.global_scale].shape) != 1)
      return Bad(*g.global_scale, "has shape " + Dims(tensors_[*g.global_scale].shape) + ", not [] or [1]");
    g.coding = Coding::kE2M1;
    std::span<const uint64_t> lead(t.shape.data(), t.shape.size() - 1);
    SetMatrix(g, lead, t.shape.back() * 2);
    g.scale = s;
    ZF_TRY(CheckScale(g, s, lead, g.cols, Grid{1, 16}, false));
    return std::optional<Group>(std::move(g));
  }

  // compressed-tensors X.weight_packed: nvfp4-pack-quantized (U8) or
  // pack-quantized (I32).
  Result<std::optional<Group>> RecognizePacked(uint32_t i, Group g) {
    const SourceTensor& t = tensors_[i];
    const std::string module = t.name.substr(0, t.name.size() - 14);
    g.name = module + ".weight";
    std::optional<uint32_t> s = Find(module + ".weight_scale");
    if (!s) return Bad(i, "is packed without " + module + ".weight_scale");
    g.members.push_back(*s);
    for (const char* extra : {".input_global_scale", ".input_scale", ".input_zero_point"})
      if (std::optional<uint32_t> k = Find(module + extra)) g.members.push_back(*k);
    std::optional<uint32_t> g_idx = Find(module + ".weight_g_idx");
    if (g_idx) g.members.push_back(*g_idx);
    ZF_ASSIGN_OR_RETURN(Params p, CompressedTensorsParams(i, module));
    if (t.dtype == Dtype::U8) {
      if (p.known && p.format != "nvfp4-pack-quantized")
        return Status::Unsupported("compressed-tensors format '" + p.format + "' for a U8 weight_packed is not decoded")
            .WithRecord(t.name).WithPath(files_[t.file]);
      std::optional<uint32_t> gs = Find(module + ".weight_global_scale");
      if (!gs) return Bad(i, "is NVFP4 packed without " + module + ".weight_global_scale");
      ZF_TRY(Allowed(i, Scheme::kNvfp4CT));
      g.members.push_back(*gs);
      g.scheme = Scheme::kNvfp4CT;
      g.global_scale = *gs;
      g.global_divides = true;
      return Fp4Group(std::move(g), *s);
    }
    ZF_TRY(NeedDtype(i, {Dtype::I32}, "packed weight"));
    ZF_TRY(Allowed(i, Scheme::kIntPacked));
    g.scheme = Scheme::kIntPacked;
    std::optional<uint32_t> shape = Find(module + ".weight_shape");
    if (!shape) return Bad(i, "is packed without " + module + ".weight_shape");
    g.members.push_back(*shape);
    if (!p.known) return NeedFolder(i, "the bits and groups of a pack-quantized weight");
    if (!p.format.empty() && p.format != "pack-quantized")
      return Status::Unsupported("compressed-tensors format '" + p.format + "' for an I32 weight_packed is not decoded")
          .WithRecord(t.name).WithPath(files_[t.file]);
    if (p.bits < 1 || p.bits > 8) return Status::Unsupported("num_bits " + std::to_string(p.bits) + " is not decoded (1 to 8)").WithRecord(t.name).WithPath(files_[t.file]);
    const std::vector<int64_t>& dims = tensors_[*shape].values;
    if (dims.size() < 2 || std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
      return Bad(*shape, "does not hold the weight's shape (2 or more dimensions)");
    std::vector<uint64_t> full(dims.begin(), dims.end());
    // The decoded tensor's float32 bytes must fit 64 bits (the packed
    // tensor's shape is checked against these dimensions next).
    uint64_t elements = 4;
    for (uint64_t d : full) {
      if (d != 0 && elements > UINT64_MAX / 8 / d)
        return Bad(*shape, "holds a shape too large to decode: " + Dims(full));
      elements *= d;
    }
    std::span<const uint64_t> lead(full.data(), full.size() - 1);
    std::vector<uint64_t> want(lead.begin(), lead.end());
    want.push_back(CeilDiv(full.back() * p.bits, 32));
    if (t.shape != want)
      return Bad(i, "has shape " + Dims(t.shape) + ", not " + Dims(want) + " for " + std::to_string(p.bits) +
                        "-bit values of weight_shape " + Dims(full));
    g.coding = Coding::kIntPacked;
    g.bits = p.bits;
    SetMatrix(g, lead, full.back());
    ZF_ASSIGN_OR_RETURN(Grid grid, StrategyGrid(i, p, g.rows, g.cols));
    g.scale = *s;
    ZF_TRY(CheckScale(g, *s, lead, g.cols, grid, p.strategy == "tensor"));
    if (g_idx) ZF_TRY(ReadGroupIndex(g, *g_idx, p));
    if (!p.symmetric && (p.strategy == "group" || p.strategy == "channel") && !Find(module + ".weight_zero_point"))
      return Bad(i, "is asymmetric (its config group) without " + module + ".weight_zero_point");
    if (std::optional<uint32_t> z = Find(module + ".weight_zero_point")) {
      g.members.push_back(*z);
      g.zero_point = *z;
      const SourceTensor& zt = tensors_[*z];
      if (p.strategy == "group" || p.strategy == "channel") {
        ZF_TRY(NeedDtype(*z, {Dtype::I32}, "packed zero point"));
        if (lead.size() != 1) return Bad(*z, "is a packed zero point of a weight of rank " + std::to_string(full.size()) + "; rank 2 is decoded");
        const std::vector<uint64_t> zwant = {CeilDiv(g.rows * p.bits, 32), g.scale_cols};
        if (zt.shape != zwant)
          return Bad(*z, "has shape " + Dims(zt.shape) + ", not " + Dims(zwant) + " (" + std::to_string(p.bits) +
                             "-bit zero points packed along dim 0)");
        g.zero_point_packed = true;
      } else {
        if (!ScaleItemSize(zt.dtype) || Numel(zt.shape) != Numel(tensors_[*s].shape))
          return Bad(*z, "has shape " + Dims(zt.shape) + ", not the scale's " + Dims(tensors_[*s].shape));
      }
    }
    return std::optional<Group>(std::move(g));
  }

  // compressed-tensors activation ordering (forward_helpers.py
  // _process_group): the columns permuted by argsort(g_idx), cut into groups
  // of group_size, so column c has the scale of group g_idx[c] when each
  // group holds group_size columns (the last one the rest). A g_idx holding
  // -1 means column order (is_column_order). Other counts are refused: the
  // reference's groups would not be g_idx's.
  Status ReadGroupIndex(Group& g, uint32_t t, const Params& p) const {
    const std::vector<int64_t>& v = tensors_[t].values;
    if (p.strategy != "group") return Bad(t, "is an activation order of a weight whose strategy is not group");
    if (v.size() != g.cols || tensors_[t].shape.size() != 1)
      return Bad(t, "holds " + std::to_string(v.size()) + " group indices, not one per column (" +
                        std::to_string(g.cols) + "), or was not read");
    if (std::find(v.begin(), v.end(), -1) != v.end()) return Status::OK();
    std::vector<uint64_t> count(g.scale_cols, 0);
    for (int64_t x : v) {
      if (x < 0 || static_cast<uint64_t>(x) >= g.scale_cols)
        return Bad(t, "holds group index " + std::to_string(x) + ", not one of the " + std::to_string(g.scale_cols) +
                          " groups");
      ++count[static_cast<size_t>(x)];
    }
    for (uint64_t k = 0; k < g.scale_cols; ++k)
      if (count[k] != std::min(g.block_cols, g.cols - k * g.block_cols))
        return Bad(t, "puts " + std::to_string(count[k]) + " columns in group " + std::to_string(k) + ", not " +
                          std::to_string(std::min(g.block_cols, g.cols - k * g.block_cols)));
    g.g_idx.assign(v.begin(), v.end());
    return Status::OK();
  }

  const json::Value* config_;
  std::span<const SourceTensor> tensors_;
  std::span<const std::string> files_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<bool> used_;
  std::optional<std::pair<uint64_t, uint64_t>> fp8_block_;
  Plan plan_;
};

}  // namespace

bool LooksQuantized(std::span<const SourceTensor> tensors) {
  for (const SourceTensor& t : tensors)
    for (std::string_view suffix : kScaleSuffixes)
      if (EndsWith(t.name, suffix)) return true;
  return false;
}

bool NeedsValues(const SourceTensor& t) {
  if (!ScaleItemSize(t.dtype) || t.dtype == Dtype::F32 || t.dtype == Dtype::BF16 || t.dtype == Dtype::F16)
    return false;
  return (EndsWith(t.name, ".weight_shape") && t.bytes <= 64) ||
         (EndsWith(t.name, ".weight_g_idx") && t.bytes <= (uint64_t{16} << 20));
}

const char* SchemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kFp8Block: return "fp8-block";
    case Scheme::kMxfp4: return "mxfp4";
    case Scheme::kNvfp4: return "nvfp4";
    case Scheme::kNvfp4CT: return "nvfp4-ct";
    case Scheme::kIntPacked: return "int-packed";
    case Scheme::kFp8: return "fp8";
    case Scheme::kInt8: return "int8";
    case Scheme::kFp4E8M0: return "fp4-e8m0";
  }
  return "?";
}

Result<Plan> PlanDequantize(const json::Value* config, std::span<const SourceTensor> tensors,
                            std::span<const std::string> files) {
  return Planner(config, tensors, files).Run();
}

}  // namespace zerofold::quant
