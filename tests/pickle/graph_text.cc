#include "graph_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "pickle/long.h"

namespace zerofold::pickle::testing {

namespace {

std::string Quote(std::string_view raw) {
  std::string out = "\"";
  for (char c : raw) {
    auto b = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  return out + "\"";
}

class Printer {
 public:
  explicit Printer(const Graph& g) : g_(g) {}

  std::string Run(NodeId root) {
    std::vector<NodeId> todo = {root};
    indegree_[root] = 1;
    std::vector<bool> seen(g_.size());
    while (!todo.empty()) {
      NodeId n = todo.back();
      todo.pop_back();
      if (seen[n]) continue;
      seen[n] = true;
      for (NodeId c : Children(n)) {
        ++indegree_[c];
        todo.push_back(c);
      }
    }
    return Node(root) + "\n";
  }

 private:
  std::vector<NodeId> Children(NodeId n) const {
    if (g_.kind(n) == Kind::kObject) {
      const ObjectData& o = g_.Object(n);
      std::vector<NodeId> out = {o.callable, o.args};
      if (o.kwargs != kNoNode) out.push_back(o.kwargs);
      out.insert(out.end(), o.list_items.begin(), o.list_items.end());
      out.insert(out.end(), o.dict_items.begin(), o.dict_items.end());
      if (o.state != kNoNode) out.push_back(o.state);
      return out;
    }
    if (g_.kind(n) == Kind::kPersId) return {g_.PersId(n)};
    switch (g_.kind(n)) {
      case Kind::kTuple:
      case Kind::kList:
      case Kind::kDict:
      case Kind::kSet:
      case Kind::kFrozenSet: {
        std::span<const NodeId> items = g_.Items(n);
        return {items.begin(), items.end()};
      }
      default: return {};
    }
  }

  // Builders append to one string, one call per statement: labels are
  // numbered in the order printed, and GCC 12 warns falsely (-Wrestrict) on
  // "literal" + std::string.
  std::string Node(NodeId n) {
    std::string out;
    if (indegree_[n] > 1) {
      auto it = labels_.find(n);
      if (it != labels_.end()) return out.append("*").append(std::to_string(it->second));
      int label = static_cast<int>(labels_.size()) + 1;
      labels_[n] = label;
      out.append("&").append(std::to_string(label)).append("=");
    }
    Body(n, &out);
    return out;
  }

  void Seq(std::span<const NodeId> items, std::string* out) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out->append(", ");
      out->append(Node(items[i]));
    }
  }
  void Pairs(std::span<const NodeId> items, std::string* out) {
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      if (i) out->append(", ");
      out->append(Node(items[i]));
      out->append(": ");
      out->append(Node(items[i + 1]));
    }
  }
  void Wrapped(std::string_view open, std::span<const NodeId> items, bool pairs, std::string_view close,
               std::string* out) {
    out->append(open);
    if (pairs) {
      Pairs(items, out);
    } else {
      Seq(items, out);
    }
    out->append(close);
  }

  void Body(NodeId n, std::string* out) {
    switch (g_.kind(n)) {
      case Kind::kNone: out->append("None"); return;
      case Kind::kBool: out->append(g_.AsBool(n) ? "True" : "False"); return;
      case Kind::kInt: out->append(std::to_string(g_.AsInt(n))); return;
      case Kind::kBigInt: out->append(LongToDecimal(g_.AsStr(n))); return;
      case Kind::kFloat: out->append(PythonFloatRepr(g_.AsFloat(n))); return;
      case Kind::kStr: out->append(Quote(g_.AsStr(n))); return;
      case Kind::kBytes: out->append("b").append(Quote(g_.AsStr(n))); return;
      case Kind::kByteArray: out->append("bytearray(b").append(Quote(g_.AsStr(n))).append(")"); return;
      case Kind::kTuple: {
        std::span<const NodeId> items = g_.Items(n);
        Wrapped("(", items, false, items.size() == 1 ? ",)" : ")", out);
        return;
      }
      case Kind::kList: Wrapped("[", g_.Items(n), false, "]", out); return;
      case Kind::kDict: Wrapped("{", g_.Items(n), true, "}", out); return;
      case Kind::kSet: Wrapped("set([", g_.Items(n), false, "])", out); return;
      case Kind::kFrozenSet: Wrapped("frozenset([", g_.Items(n), false, "])", out); return;
      case Kind::kGlobal: out->append(g_.GlobalModule(n)).append(".").append(g_.GlobalName(n)); return;
      case Kind::kPersId: out->append("persid(").append(Node(g_.PersId(n))).append(")"); return;
      case Kind::kObject: {
        const ObjectData& o = g_.Object(n);
        static const char* kOps[] = {"reduce", "newobj", "newobj_ex", "inst"};
        out->append(kOps[static_cast<int>(o.op)]).append("(");
        out->append(Node(o.callable));
        out->append(", ");
        out->append(Node(o.args));
        if (o.kwargs != kNoNode) out->append(", ").append(Node(o.kwargs));
        if (!o.list_items.empty()) Wrapped(", append=[", o.list_items, false, "]", out);
        if (!o.dict_items.empty()) Wrapped(", setitems={", o.dict_items, true, "}", out);
        if (o.state != kNoNode) out->append(", build=").append(Node(o.state));
        out->append(")");
        return;
      }
    }
  }

  const Graph& g_;
  std::map<NodeId, int> indegree_;
  std::map<NodeId, int> labels_;
};

}  // namespace

std::string GraphText(const Graph& graph, NodeId root) { return Printer(graph).Run(root); }

std::string PythonFloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-1.2345e+03", shortest round-trip digits
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exp = std::stoi(sci.substr(e + 1));
  int decpt = exp + 1;  // value = 0.DIGITS * 10^decpt
  int nd = static_cast<int>(digits.size());
  std::string out = sign;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out.append("0.").append(-decpt, '0').append(digits);
    } else if (decpt >= nd) {
      out.append(digits).append(decpt - nd, '0').append(".0");
    } else {
      out.append(digits, 0, decpt).append(1, '.').append(digits, decpt);
    }
  } else {
    out.append(digits, 0, 1);
    if (nd > 1) out.append(1, '.').append(digits, 1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out.append(ebuf);
  }
  return out;
}

std::vector<std::byte> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return Bytes(s);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> FixtureStems(std::string_view folder) {
  std::vector<std::string> out;
  std::filesystem::path dir = std::filesystem::path(ZF_SOURCE_ROOT) / "fixtures" / "pickle" / folder;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".pkl") out.push_back((entry.path().parent_path() / entry.path().stem()).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = std::byte(static_cast<unsigned char>(s[i]));
  return out;
}

std::vector<size_t> OpcodeStarts(const std::vector<std::byte>& p) {
  auto u = [&](size_t at, int width) {
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= std::to_integer<uint64_t>(p[at + i]) << (8 * i);
    return v;
  };
  std::vector<size_t> starts;
  size_t i = 0;
  while (i < p.size()) {
    starts.push_back(i);
    unsigned char op = std::to_integer<unsigned char>(p[i++]);
    const std::string_view lines1 = "FILSVgpP", lines2 = "ci";
    const std::string_view fixed1 = "\x80KhqU\x82\x8a\x8c", fixed2 = "M\x83", fixed4 = "J\x84jrTX\x8b",
                           fixed8 = "\x95\x8d\x8e\x96";
    if (lines1.find(static_cast<char>(op)) != std::string_view::npos ||
        lines2.find(static_cast<char>(op)) != std::string_view::npos) {
      int lines = lines2.find(static_cast<char>(op)) != std::string_view::npos ? 2 : 1;
      for (int l = 0; l < lines; ++l)
        while (std::to_integer<char>(p[i++]) != '\n') {
        }
    } else if (op == 'G') {
      i += 8;
    } else if (fixed1.find(static_cast<char>(op)) != std::string_view::npos) {
      // length-prefixed with one byte: U, \x8a, \x8c, C; plain: \x80 K h q \x82
      bool prefixed = op == 'U' || op == 0x8a || op == 0x8c;
      i += 1 + (prefixed ? u(i, 1) : 0);
    } else if (op == 'C') {
      i += 1 + u(i, 1);
    } else if (fixed2.find(static_cast<char>(op)) != std::string_view::npos) {
      i += 2;
    } else if (fixed4.find(static_cast<char>(op)) != std::string_view::npos) {
      bool prefixed = op == 'T' || op == 'X' || op == 0x8b;
      i += 4 + (prefixed ? u(i, 4) : 0);
    } else if (op == 'B') {
      i += 4 + u(i, 4);
    } else if (fixed8.find(static_cast<char>(op)) != std::string_view::npos) {
      i += 8 + (op == 0x95 ? 0 : u(i, 8));
    }
  }
  return starts;
}

}  // namespace zerofold::pickle::testing
