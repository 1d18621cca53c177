#include "hfexport/map.h"

#include <map>
#include <set>
#include <utility>

#include "gather/regrid.h"
#include "gather/slice.h"
#include "torch/checkpoint.h"

namespace zerofold::hfexport {

namespace {

using gather::GatherTensor;

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Status Misfit(const GatherTensor& t, const Rule& r, const std::string& why) {
  return Status::Corrupt("op " + std::string(OpName(r.op)) + " of rule '" + r.from + "' does not fit shape " +
                                 torch::ShapeText(t.shape) + ": " + why)
      .WithRecord(t.name);
}

// A config integer: the rule's param (a config key or a number) or the
// default key's value.
Result<int64_t> Number(const Rule& r, const std::string& param, const json::Value& config,
                       const std::vector<std::string>& default_keys) {
  std::vector<std::string> keys = default_keys;
  if (auto p = r.params.find(param); p != r.params.end()) {
    if (p->second.is_number()) return *p->second.AsInt64();
    keys = {p->second.string()};
  }
  for (const std::string& k : keys) {
    const json::Value* v = config.Find(k);
    if (!v || v->is_null()) continue;
    std::optional<int64_t> n = v->AsInt64();
    if (!n || *n <= 0) return Status::Corrupt("config.json " + k + " is no positive integer");
    return *n;
  }
  return Status::Corrupt("config.json has no " + keys[0] + " (op " + std::string(OpName(r.op)) + " of rule '" +
                                 r.from + "' needs it)");
}

// The tensor with grid == shape (a flat grid refined into the shape).
Result<GatherTensor> ShapeGrid(const GatherTensor& t) {
  if (t.grid == t.shape) return t;
  if (t.grid.size() == 1 && !t.shape.empty()) return gather::RefineGrid(t, 0, t.shape);
  return Status::Unsupported("a tensor whose grid " + torch::ShapeText(t.grid) + " is neither its shape " +
                             torch::ShapeText(t.shape) + " nor flat").WithRecord(t.name);
}

// Rows [begin, end) of each of `blocks` equal row blocks of t (its dim 0
// refined into [blocks, rows / blocks]), as a tensor of shape
// [blocks * (end - begin), t.shape[1:]...].
Result<GatherTensor> BlockRows(const GatherTensor& t, int64_t blocks, int64_t begin, int64_t end, std::string name) {
  std::vector<int64_t> factors = {blocks, t.shape[0] / blocks};
  ZF_ASSIGN_OR_RETURN(GatherTensor g, gather::RefineGrid(t, 0, factors));
  ZF_ASSIGN_OR_RETURN(GatherTensor s, gather::SelectRange(g, 1, begin, end));
  std::vector<int64_t> shape = t.shape;
  shape[0] = blocks * (end - begin);
  s.name = std::move(name);
  return gather::Reshape(s, std::move(shape));
}

// Does the rule's op on `t`, appending the outputs named `names`.
Status DoOp(const GatherTensor& in, const Rule& r, const std::vector<std::string>& names, const json::Value& config,
            std::vector<GatherTensor>* out) {
  ZF_ASSIGN_OR_RETURN(GatherTensor t, ShapeGrid(in));
  const int64_t rows = t.shape.empty() ? 0 : t.shape[0];
  if (r.op != Op::kCopy && t.shape.empty()) return Misfit(t, r, "a scalar");
  switch (r.op) {
    case Op::kCopy:
      t.name = names[0];
      out->push_back(std::move(t));
      return Status::OK();
    case Op::kDrop:
      return Status::OK();
    case Op::kTrimVocab: {
      ZF_ASSIGN_OR_RETURN(int64_t vocab, Number(r, "vocab_size", config, {"vocab_size"}));
      if (rows < vocab) return Misfit(t, r, "fewer rows than config.json vocab_size " + std::to_string(vocab));
      ZF_ASSIGN_OR_RETURN(GatherTensor s, BlockRows(t, 1, 0, vocab, names[0]));
      out->push_back(std::move(s));
      return Status::OK();
    }
    case Op::kSplitQkv: {
      ZF_ASSIGN_OR_RETURN(int64_t heads, Number(r, "heads", config, {"num_attention_heads"}));
      ZF_ASSIGN_OR_RETURN(int64_t groups, Number(r, "groups", config, {"num_key_value_heads", "num_attention_heads"}));
      int64_t head_dim = 0;
      if (const json::Value* hd = config.Find("head_dim"); r.params.count("head_dim") || (hd && !hd->is_null())) {
        ZF_ASSIGN_OR_RETURN(head_dim, Number(r, "head_dim", config, {"head_dim"}));
      } else {
        ZF_ASSIGN_OR_RETURN(int64_t hidden, Number(r, "hidden_size", config, {"hidden_size"}));
        if (hidden % heads != 0) return Misfit(t, r, "hidden_size is no multiple of num_attention_heads");
        head_dim = hidden / heads;
      }
      if (heads % groups != 0) return Misfit(t, r, "num_attention_heads is no multiple of the query groups");
      const int64_t q = heads / groups * head_dim, per_group = q + 2 * head_dim;
      if (rows != groups * per_group)
        return Misfit(t, r, std::to_string(groups) + " query groups of (" + std::to_string(heads / groups) + " + 2) x " +
                                std::to_string(head_dim) + " rows are " + std::to_string(groups * per_group) + " rows");
      const int64_t bounds[4] = {0, q, q + head_dim, per_group};
      for (size_t i = 0; i < 3; ++i) {
        ZF_ASSIGN_OR_RETURN(GatherTensor s, BlockRows(t, groups, bounds[i], bounds[i + 1], names[i]));
        out->push_back(std::move(s));
      }
      return Status::OK();
    }
    case Op::kSplitRows: {
      const int64_t parts = static_cast<int64_t>(names.size());
      if (rows % parts != 0) return Misfit(t, r, "rows are no multiple of " + std::to_string(parts));
      ZF_ASSIGN_OR_RETURN(GatherTensor g, gather::RefineGrid(t, 0, std::vector<int64_t>{parts, rows / parts}));
      std::vector<int64_t> shape = t.shape;
      shape[0] = rows / parts;
      for (int64_t i = 0; i < parts; ++i) {
        ZF_ASSIGN_OR_RETURN(GatherTensor block, gather::SelectRange(g, 0, i, i + 1));
        block.name = names[static_cast<size_t>(i)];
        ZF_ASSIGN_OR_RETURN(GatherTensor part, gather::Reshape(block, shape));
        out->push_back(std::move(part));
      }
      return Status::OK();
    }
    case Op::kRopePermute: {
      ZF_ASSIGN_OR_RETURN(int64_t heads, Number(r, "heads", config, {"num_attention_heads"}));
      if (rows % heads != 0 || (rows / heads) % 2 != 0)
        return Misfit(t, r, std::to_string(heads) + " heads of an even head_dim do not make " + std::to_string(rows) + " rows");
      ZF_ASSIGN_OR_RETURN(GatherTensor g, gather::RefineGrid(t, 0, std::vector<int64_t>{heads, rows / heads / 2, 2}));
      std::vector<size_t> perm = {0, 2, 1};
      for (size_t d = 3; d < g.grid.size(); ++d) perm.push_back(d);
      ZF_ASSIGN_OR_RETURN(GatherTensor p, gather::PermuteGrid(g, perm));
      p.name = names[0];
      ZF_ASSIGN_OR_RETURN(GatherTensor s, gather::Reshape(p, t.shape));
      out->push_back(std::move(s));
      return Status::OK();
    }
    case Op::kUnstack:
    case Op::kTied:
      return Status::Internal("done by the caller");
  }
  return Status::Internal("unknown op");
}

}  // namespace

bool ConfigFlag(const json::Value& config, const std::string& key) {
  const json::Value* v = config.Find(key);
  return v && v->is_bool() && v->boolean();
}

namespace {

std::string Stripped(const Table& table, const std::string& name) {
  for (const std::string& p : table.strip_prefixes)
    if (StartsWith(name, p)) return name.substr(p.size());
  return name;
}

// The tensor with floating elements widened to float32 (exact from 16 bits).
GatherTensor Comparable(GatherTensor t) {
  if (torch::Info(t.dtype).is_floating) t.dtype = torch::DType::kFloat32;
  return t;
}

// The first rule of `table` whose conditions `config` meets and whose
// pattern matches `name` (its bindings in *bound), or nullptr.
const Rule* FirstRule(const Table& table, const json::Value& config, const std::string& name,
                      std::optional<Bindings>* bound) {
  for (const Rule& r : table.rules) {
    if (!r.if_key.empty() && !ConfigFlag(config, r.if_key)) continue;
    if (!r.unless_key.empty() && ConfigFlag(config, r.unless_key)) continue;
    if ((*bound = MatchPattern(r.from, name))) return &r;
  }
  return nullptr;
}

}  // namespace

Result<Mapped> ApplyTable(gather::GatherPlan trainer, const Table& table, const json::Value& config) {
  Mapped m;
  m.plan.sources = std::move(trainer.sources);
  std::set<std::string> taken;
  std::map<std::string, size_t> by_name;  // stripped trainer name -> index
  for (size_t i = 0; i < trainer.tensors.size(); ++i) by_name.emplace(Stripped(table, trainer.tensors[i].name), i);
  // Tied rules first: they read tensors that other rules move out.
  for (const GatherTensor& t : trainer.tensors) {
    std::optional<Bindings> b;
    const Rule* r = FirstRule(table, config, Stripped(table, t.name), &b);
    if (r == nullptr || r->op != Op::kTied) continue;
    Result<std::string> other = Substitute(r->to[0], *b, config);
    if (!other.ok()) return Status(other.status()).WithRecord(t.name).WithPath(table.path);
    auto found = by_name.find(*other);
    if (found == by_name.end() || trainer.tensors[found->second].shape != t.shape)
      return Status::Corrupt("tied to " + *other + ", which the checkpoint " +
                             (found == by_name.end() ? std::string("lacks")
                                                     : "holds with shape " +
                                                           torch::ShapeText(trainer.tensors[found->second].shape)))
          .WithRecord(t.name)
          .WithPath(table.path);
    m.tied.emplace_back(Comparable(t), Comparable(trainer.tensors[found->second]));
  }
  std::map<std::string, std::string> copied;  // trainer name -> HF name, for copy rules
  for (GatherTensor& t : trainer.tensors) {
    std::optional<Bindings> b;
    const Rule* rule = FirstRule(table, config, Stripped(table, t.name), &b);
    if (!rule) {
      m.unmapped.push_back(t.name);
      continue;
    }
    if (rule->op == Op::kDrop || rule->op == Op::kTied) {
      m.dropped.push_back(t.name);
      continue;
    }
    std::vector<GatherTensor> outs;
    if (rule->op == Op::kUnstack) {
      if (t.shape.empty()) return Misfit(t, *rule, "a scalar");
      ZF_ASSIGN_OR_RETURN(GatherTensor g, ShapeGrid(t));
      // The placeholder `to` binds and `from` does not takes the index.
      std::string free;
      for (size_t i = 0; i + 2 < rule->to[0].size(); ++i)
        if (rule->to[0][i] == '{' && rule->to[0][i + 2] == '}' && !b->count(std::string(1, rule->to[0][i + 1])))
          free = std::string(1, rule->to[0][i + 1]);
      if (free.empty()) return Misfit(t, *rule, "'to' has no placeholder for the index");
      for (int64_t i = 0; i < g.shape[0]; ++i) {
        Bindings bi = *b;
        bi[free] = std::to_string(i);
        Result<std::string> n = Substitute(rule->to[0], bi, config);
        if (!n.ok()) return Status(n.status()).WithRecord(t.name).WithPath(table.path);
        ZF_ASSIGN_OR_RETURN(GatherTensor s, gather::SliceAxis0(g, i, *n));
        outs.push_back(std::move(s));
      }
    } else {
      std::vector<std::string> names;
      for (const std::string& to : rule->to) {
        Result<std::string> n = Substitute(to, *b, config);
        if (!n.ok()) return Status(n.status()).WithRecord(t.name).WithPath(table.path);
        names.push_back(std::move(n).value());
      }
      Status done = DoOp(t, *rule, names, config, &outs);
      if (!done.ok()) return done.WithPath(table.path);
    }
    if (rule->op == Op::kCopy && outs.size() == 1) copied.emplace(t.name, outs[0].name);
    for (GatherTensor& o : outs) {
      if (!taken.insert(o.name).second)
        return Status::Corrupt("two trainer tensors map to " + o.name).WithRecord(t.name).WithPath(table.path);
      m.plan.tensors.push_back(std::move(o));
    }
  }
  // The trainer's own ties (DeepSpeed's lm_head.weight sharing the
  // embedding's storage): under their mapped names when a copy rule maps
  // the name and its owner was copied.
  for (const gather::Tie& tie : trainer.ties) {
    auto owner = copied.find(tie.owner);
    std::optional<Bindings> b;
    const Rule* rule = FirstRule(table, config, Stripped(table, tie.name), &b);
    if (owner == copied.end() || !rule || rule->op != Op::kCopy || rule->to.size() != 1) {
      m.unmapped.push_back(tie.name);
      continue;
    }
    Result<std::string> n = Substitute(rule->to[0], *b, config);
    if (!n.ok()) return Status(n.status()).WithRecord(tie.name).WithPath(table.path);
    if (!taken.insert(*n).second)
      return Status::Corrupt("two trainer tensors map to " + *n).WithRecord(tie.name).WithPath(table.path);
    m.trainer_ties.push_back(gather::Tie{*n, owner->second});
  }
  return m;
}

}  // namespace zerofold::hfexport
