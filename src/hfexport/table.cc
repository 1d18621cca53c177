#include "hfexport/table.h"

#include <cstddef>
#include <utility>

#include "json/reader.h"

namespace zerofold::hfexport {

// Defined by the build (tables/hf/embed.py): each table's repository path
// and text.
struct EmbeddedTable {
  const char* path;
  const char* text;
};
extern const EmbeddedTable kEmbeddedTables[];
extern const size_t kEmbeddedTableCount;

namespace {

constexpr struct {
  Op op;
  const char* name;
} kOps[] = {{Op::kCopy, "copy"},         {Op::kDrop, "drop"},         {Op::kTrimVocab, "trim_vocab"},
            {Op::kSplitQkv, "split_qkv"}, {Op::kSplitRows, "split_rows"}, {Op::kRopePermute, "rope_permute"},
            {Op::kUnstack, "unstack"},   {Op::kTied, "tied"}};

Status Bad(const std::string& path, uint64_t offset, const std::string& message) {
  return Status::Corrupt("family table: " + message).WithPath(path).WithOffset(offset);
}

// A string, or a list of strings, into `out`.
Status Strings(const json::Value& v, const std::string& path, std::string_view member, std::vector<std::string>* out) {
  if (v.is_string()) {
    out->push_back(v.string());
    return Status::OK();
  }
  if (!v.is_array()) return Bad(path, v.offset(), std::string(member) + " is no string or list of strings");
  for (const json::Value& s : v.array()) {
    if (!s.is_string()) return Bad(path, s.offset(), std::string(member) + " holds a " + std::string(json::TypeName(s.type())));
    out->push_back(s.string());
  }
  return Status::OK();
}

Status CheckPattern(const std::string& p, const std::string& path, uint64_t offset) {
  size_t open = std::string::npos;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '{') {
      if (open != std::string::npos) return Bad(path, offset, "pattern '" + p + "' nests a brace");
      open = i;
    } else if (p[i] == '}') {
      if (open == std::string::npos || i == open + 1) return Bad(path, offset, "pattern '" + p + "' has a stray '}'");
      open = std::string::npos;
    }
  }
  if (open != std::string::npos) return Bad(path, offset, "pattern '" + p + "' leaves a brace open");
  return Status::OK();
}

// How many `to` names an op takes; 0: any number >= 2.
size_t Arity(Op op) {
  switch (op) {
    case Op::kDrop: return size_t{0} - 1;  // none
    case Op::kSplitQkv: return 3;
    case Op::kSplitRows: return 0;
    default: return 1;
  }
}

Result<Rule> ParseRule(const json::Value& v, const std::string& path) {
  if (!v.is_object()) return Bad(path, v.offset(), "a rule is no object");
  Rule r;
  r.offset = v.offset();
  bool has_from = false;
  for (const json::Member& m : v.members()) {
    const json::Value& x = m.value;
    if (m.key == "from") {
      if (!x.is_string() || x.string().empty()) return Bad(path, x.offset(), "rule 'from' is no pattern string");
      r.from = x.string();
      has_from = true;
      ZF_TRY(CheckPattern(r.from, path, x.offset()));
    } else if (m.key == "to") {
      ZF_TRY(Strings(x, path, "'to'", &r.to));
      for (const std::string& t : r.to) ZF_TRY(CheckPattern(t, path, x.offset()));
    } else if (m.key == "op") {
      bool known = false;
      for (const auto& o : kOps)
        if (x.is_string() && x.string() == o.name) {
          r.op = o.op;
          known = true;
        }
      if (!known) return Bad(path, x.offset(), "unknown op" + (x.is_string() ? " '" + x.string() + "'" : std::string()));
    } else if (m.key == "if" || m.key == "unless") {
      if (!x.is_string()) return Bad(path, x.offset(), "rule '" + m.key + "' is no config key");
      (m.key == "if" ? r.if_key : r.unless_key) = x.string();
    } else if (m.key == "heads" || m.key == "groups" || m.key == "head_dim") {
      if (!x.is_string() && !(x.is_number() && x.AsInt64())) return Bad(path, x.offset(), "rule '" + m.key + "' is no config key or integer");
      r.params[m.key] = x;
    } else if (m.key != "note") {
      return Bad(path, m.key_offset, "unknown rule member '" + m.key + "'");
    }
  }
  if (!has_from) return Bad(path, v.offset(), "a rule without 'from'");
  const size_t arity = Arity(r.op);
  const bool ok = arity == 0 ? r.to.size() >= 2 : arity == size_t{0} - 1 ? r.to.empty() : r.to.size() == arity;
  if (!ok)
    return Bad(path, v.offset(), "op " + std::string(OpName(r.op)) + " of '" + r.from + "' takes " +
                                     (arity == 0 ? std::string("2 or more") : arity == size_t{0} - 1 ? std::string("no") : std::to_string(arity)) +
                                     " 'to' names, not " + std::to_string(r.to.size()));
  return r;
}

// 'text', built by appending (GCC 12's -Wrestrict misfires on "'" + string).
std::string Quoted(std::string_view text) {
  std::string q(1, '\'');
  q.append(text);
  q.push_back('\'');
  return q;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool DigitsOnly(std::string_view placeholder) { return placeholder.size() == 1 && placeholder[0] >= 'A' && placeholder[0] <= 'Z'; }

bool MatchFrom(std::string_view p, std::string_view s, Bindings* b) {
  if (p.empty()) return s.empty();
  if (p[0] != '{') return !s.empty() && s[0] == p[0] && MatchFrom(p.substr(1), s.substr(1), b);
  const size_t close = p.find('}');
  const std::string key(p.substr(1, close - 1));
  const std::string_view rest = p.substr(close + 1);
  for (size_t n = 1; n <= s.size(); ++n) {
    if (DigitsOnly(key) && !IsDigit(s[n - 1])) break;
    const std::string value(s.substr(0, n));
    auto bound = b->find(key);
    if (bound != b->end() && bound->second != value) continue;
    const bool fresh = bound == b->end();
    if (fresh) (*b)[key] = value;
    if (MatchFrom(rest, s.substr(n), b)) return true;
    if (fresh) b->erase(key);
  }
  return false;
}

}  // namespace

std::string_view OpName(Op op) {
  for (const auto& o : kOps)
    if (o.op == op) return o.name;
  return "?";
}

Result<Table> ParseTable(std::string_view text, const std::string& path) {
  Result<json::Value> doc = json::Parse(text);
  if (!doc.ok()) return Status(doc.status()).WithPath(path);
  if (!doc->is_object()) return Bad(path, doc->offset(), "the table is no JSON object");
  Table t;
  t.path = path;
  bool has_rules = false;
  for (const json::Member& m : doc->members()) {
    const json::Value& x = m.value;
    if (m.key == "family" || m.key == "source") {
      if (!x.is_string() || x.string().empty()) return Bad(path, x.offset(), "'" + m.key + "' is no string");
      (m.key == "family" ? t.family : t.source) = x.string();
    } else if (m.key == "model_types") {
      ZF_TRY(Strings(x, path, "'model_types'", &t.model_types));
    } else if (m.key == "architectures") {
      ZF_TRY(Strings(x, path, "'architectures'", &t.architectures));
    } else if (m.key == "strip_prefixes") {
      ZF_TRY(Strings(x, path, "'strip_prefixes'", &t.strip_prefixes));
    } else if (m.key == "rules") {
      if (!x.is_array()) return Bad(path, x.offset(), "'rules' is no list");
      has_rules = true;
      for (const json::Value& r : x.array()) {
        ZF_ASSIGN_OR_RETURN(Rule rule, ParseRule(r, path));
        t.rules.push_back(std::move(rule));
      }
    } else if (m.key == "ties") {
      if (!x.is_array()) return Bad(path, x.offset(), "'ties' is no list");
      for (const json::Value& tie : x.array()) {
        const json::Value* name = tie.Find("name");
        const json::Value* owner = tie.Find("owner");
        const json::Value* cond = tie.Find("if");
        if (!name || !name->is_string() || !owner || !owner->is_string() || (cond && !cond->is_string()) ||
            tie.members().size() != 2u + (cond ? 1 : 0))
          return Bad(path, tie.offset(), "a tie is {\"name\": NAME, \"owner\": NAME, \"if\": KEY (optional)}");
        t.ties.push_back(TableTie{name->string(), owner->string(), cond ? cond->string() : ""});
      }
    } else if (m.key != "facts" && m.key != "note") {
      return Bad(path, m.key_offset, "unknown member '" + m.key + "'");
    }
  }
  if (t.family.empty() || t.source.empty() || !has_rules || t.model_types.empty())
    return Bad(path, doc->offset(), "a table needs 'family', 'source', 'model_types' and 'rules'");
  if (t.source != "megatron" && t.source != "torchtitan" && t.source != "hf")
    return Bad(path, doc->offset(), "'source' is '" + t.source + "', not megatron, torchtitan or hf");
  return t;
}

Result<std::vector<Table>> BuiltinTables() {
  std::vector<Table> tables;
  for (size_t i = 0; i < kEmbeddedTableCount; ++i) {
    Result<Table> t = ParseTable(kEmbeddedTables[i].text, std::string("builtin:") + kEmbeddedTables[i].path);
    if (!t.ok()) return Status::Internal("a built-in table does not parse: " + t.status().ToString());
    tables.push_back(std::move(t).value());
  }
  return tables;
}

std::optional<Bindings> MatchPattern(std::string_view pattern, std::string_view name) {
  Bindings b;
  if (!MatchFrom(pattern, name, &b)) return std::nullopt;
  return b;
}

Result<std::string> Substitute(std::string_view to, const Bindings& bindings, const json::Value& config) {
  std::string out;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] != '{') {
      out.push_back(to[i]);
      continue;
    }
    const size_t close = to.find('}', i);
    std::string key(to.substr(i + 1, close - i - 1));
    i = close;
    std::string add;
    if (const size_t plus = key.find('+'); plus != std::string::npos) {
      add = key.substr(plus + 1);
      key.resize(plus);
    }
    auto found = bindings.find(key);
    if (found == bindings.end()) return Status::Corrupt(Quoted(to) + " names {" + key + "}, which its pattern does not bind");
    if (add.empty()) {
      out += found->second;
      continue;
    }
    const json::Value* v = config.Find(add);
    std::optional<int64_t> n = v ? v->AsInt64() : std::nullopt;
    if (!n) return Status::Corrupt(Quoted(to) + " adds config." + add + ", which is no integer in config.json");
    out += std::to_string(std::stoll(found->second) + *n);
  }
  return out;
}

}  // namespace zerofold::hfexport
