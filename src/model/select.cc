#include "model/select.h"

#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <unordered_set>
#include <utility>

#include "json/writer.h"
#include "model/glob.h"
#include "model/graph_children.h"
#include "torch/tensor_recognizer.h"

namespace zerofold::model {

namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::kNoNode;
using pickle::NodeId;

constexpr size_t kMaxListedKeys = 20;
constexpr size_t kMaxListedNames = 5;

std::string JoinPatterns(std::span<const std::string> patterns) {
  std::string out;
  for (size_t i = 0; i < patterns.size(); ++i) out += (i ? "," : "") + patterns[i];
  return out;
}
constexpr std::string_view kArgsKey = "args";
constexpr std::string_view kKwargsKey = "kwargs";
constexpr std::string_view kStateKey = "state";

// A child reachable by a key: its display form (a quoted str, a decimal int
// or index, a bare attribute name) and whether `key` names it.
struct Keyed {
  std::string display;
  NodeId node;
  int match;  // 2: exact str key, 1: int key or index in decimal, 0: no match
};

int MatchKey(const Graph& g, NodeId k, std::string_view key) {
  if (g.kind(k) == Kind::kStr || g.kind(k) == Kind::kBytes) return g.AsStr(k) == key ? 2 : 0;
  if (g.kind(k) == Kind::kInt) return std::to_string(g.AsInt(k)) == key ? 1 : 0;
  return 0;
}

std::string KeyDisplay(const Graph& g, NodeId k) {
  switch (g.kind(k)) {
    case Kind::kStr:
    case Kind::kBytes: return json::QuoteForDisplay(g.AsStr(k), 80);
    case Kind::kInt: return std::to_string(g.AsInt(k));
    case Kind::kNone: return "None";
    case Kind::kBool: return g.AsBool(k) ? "True" : "False";
    default: return "<a key that is no str or int>";
  }
}

void AddEntries(const Graph& g, std::span<const NodeId> flat, std::string_view key, std::vector<Keyed>& out) {
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    out.push_back({KeyDisplay(g, flat[i]), flat[i + 1], MatchKey(g, flat[i], key)});
}

void AddItems(std::span<const NodeId> items, std::string_view key, std::vector<Keyed>& out) {
  for (size_t i = 0; i < items.size(); ++i) {
    std::string index = std::to_string(i);
    out.push_back({index, items[i], index == key ? 1 : 0});
  }
}

// The keyed children of `n`, as tensor names walk them; `what` says what n is.
std::vector<Keyed> KeyedChildren(const Graph& g, NodeId n, std::string_view key, std::string& what) {
  std::vector<Keyed> out;
  switch (g.kind(n)) {
    case Kind::kDict:
      what = "dict";
      AddEntries(g, g.Items(n), key, out);
      return out;
    case Kind::kList:
    case Kind::kTuple:
      what = g.kind(n) == Kind::kList ? "list" : "tuple";
      AddItems(g.Items(n), key, out);
      return out;
    case Kind::kObject: break;
    default:
      what = "value with no keys";
      return out;
  }
  const pickle::ObjectData& obj = g.Object(n);
  if (IsOrderedDict(g, n)) {
    what = "OrderedDict";
    AddEntries(g, MappingEntries(g, n), key, out);
  } else {
    what = "object";
    if (g.kind(obj.callable) == Kind::kGlobal)
      what = std::string(g.GlobalModule(obj.callable)) + "." + std::string(g.GlobalName(obj.callable)) + " object";
    if (obj.args != kNoNode) out.push_back({std::string(kArgsKey), obj.args, key == kArgsKey ? 2 : 0});
    AddEntries(g, obj.dict_items, key, out);
  }
  if (obj.kwargs != kNoNode) out.push_back({std::string(kKwargsKey), obj.kwargs, key == kKwargsKey ? 2 : 0});
  AddItems(obj.list_items, key, out);
  if (obj.state != kNoNode) out.push_back({std::string(kStateKey), obj.state, key == kStateKey ? 2 : 0});
  return out;
}

std::string Where(const std::vector<std::string>& keys, size_t depth) {
  if (depth == 0) return "the root";
  std::string path;
  for (size_t i = 0; i < depth; ++i) path += (i ? "/" : "") + keys[i];
  return "\"" + path + "\"";
}

// Calls fn(n) for every node reachable from root, once each.
template <typename Fn>
void ForEachReachable(const Graph& g, NodeId root, Fn&& fn) {
  if (root >= g.size()) return;
  std::vector<bool> seen(g.size(), false);
  std::vector<NodeId> stack = {root};
  seen[root] = true;
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    fn(n);
    ForEachChild(g, n, [&](NodeId c) {
      if (c < g.size() && !seen[c]) {
        seen[c] = true;
        stack.push_back(c);
      }
    });
  }
}

}  // namespace

namespace {

// Makes `node` the root of ckpt: its tensors named again from it, the
// storages it does not reach dropped (unsafe globals stay: select.h).
Status ReRoot(torch::Checkpoint& ckpt, NodeId node, const torch::ReadOptions& options) {
  const Graph& g = ckpt.graph;
  ZF_ASSIGN_OR_RETURN(torch::Recognized found,
                      torch::RecognizeTensors(g, node, torch::RecognizeOptionsFor(ckpt.format, options)));
  // Storages are every pid of the graph in document order, whatever the root;
  // the ones the subtree does not reach are dropped below.
  if (found.storages.size() != ckpt.storages.size())
    return Status::Internal("the subtree names " + std::to_string(found.storages.size()) + " storages, the file " +
                            std::to_string(ckpt.storages.size()));
  ckpt.root = node;
  ckpt.tensors = std::move(found.tensors);
  return DropUnreachableStorages(ckpt);
}

}  // namespace

Result<std::vector<std::string>> SplitKeyPath(std::string_view keypath) {
  std::vector<std::string> keys;
  if (keypath.empty()) return keys;
  size_t start = 0;
  while (true) {
    size_t slash = keypath.find('/', start);
    std::string_view key = keypath.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (key.empty())
      return Status::InvalidArgument("--select " + json::QuoteForDisplay(keypath) + " has an empty key at character " +
                                     std::to_string(start + 1));
    keys.emplace_back(key);
    if (slash == std::string_view::npos) return keys;
    start = slash + 1;
  }
}

Status SelectSubtree(torch::Checkpoint& ckpt, std::string_view keypath, const torch::ReadOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> keys, SplitKeyPath(keypath));
  if (keys.empty()) return Status::OK();
  const Graph& g = ckpt.graph;
  std::unordered_set<NodeId> tensor_nodes;
  for (const torch::Tensor& t : ckpt.tensors) tensor_nodes.insert(t.node);

  NodeId node = ckpt.root;
  for (size_t depth = 0; depth < keys.size(); ++depth) {
    const std::string& key = keys[depth];
    if (tensor_nodes.count(node))
      return Status::InvalidArgument("--select: " + Where(keys, depth) + " is a tensor, which has no key \"" + key + "\"");
    std::string what;
    std::vector<Keyed> children = KeyedChildren(g, node, key, what);
    const Keyed* best = nullptr;
    for (const Keyed& c : children)
      if (c.match > 0 && (best == nullptr || c.match > best->match)) best = &c;
    if (best != nullptr) {
      node = best->node;
      continue;
    }
    std::string message = "--select: no key \"" + key + "\" in the " + what + " at " + Where(keys, depth);
    if (children.empty()) {
      message += ", which has no keys";
    } else {
      message += "; its keys: ";
      for (size_t i = 0; i < children.size() && i < kMaxListedKeys; ++i)
        message += (i ? ", " : "") + children[i].display;
      if (children.size() > kMaxListedKeys)
        message += " (and " + std::to_string(children.size() - kMaxListedKeys) + " more)";
    }
    return Status::InvalidArgument(message);
  }

  if (tensor_nodes.count(node)) {
    // One tensor keeps its key as its name: the root becomes {KEY: tensor}.
    const NodeId dict = ckpt.graph.AddDict();
    ckpt.graph.SetItem(dict, ckpt.graph.AddStr(keys.back()), node);
    node = dict;
  }
  return ReRoot(ckpt, node, options);
}

Status SelectTensors(torch::Checkpoint& ckpt, std::string_view keypath, std::span<const std::string> only,
                     const torch::ReadOptions& options, bool none_ok) {
  ZF_TRY(SelectSubtree(ckpt, keypath, options));
  return KeepOnly(ckpt, only, options, none_ok);
}

Status KeepOnly(torch::Checkpoint& ckpt, std::span<const std::string> patterns, const torch::ReadOptions& options,
                bool none_ok) {
  if (patterns.empty()) return Status::OK();
  // A tie: the same storage viewed at the same offset, shape and stride.
  using View = std::tuple<uint32_t, int64_t, std::vector<int64_t>, std::vector<int64_t>>;
  auto view_of = [](const torch::Tensor& t) { return View{t.storage, t.storage_offset, t.shape, t.stride}; };
  std::set<View> matched;
  for (const torch::Tensor& t : ckpt.tensors)
    if (MatchesAny(patterns, t.name)) matched.insert(view_of(t));
  const NodeId dict = ckpt.graph.AddDict();
  std::unordered_set<std::string> names;
  for (const torch::Tensor& t : ckpt.tensors)
    if (matched.count(view_of(t)) && names.insert(t.name).second)
      ckpt.graph.SetItem(dict, ckpt.graph.AddStr(t.name), t.node);
  if (names.empty() && !none_ok) {
    std::string message = "--only " + json::QuoteForDisplay(JoinPatterns(patterns)) + " matches no tensor";
    if (ckpt.tensors.empty()) return Status::InvalidArgument(message + "; the checkpoint holds none");
    message += "; its names look like: ";
    for (size_t i = 0; i < ckpt.tensors.size() && i < kMaxListedNames; ++i)
      message += (i ? ", " : "") + json::QuoteForDisplay(ckpt.tensors[i].name, 80);
    if (ckpt.tensors.size() > kMaxListedNames)
      message += " (and " + std::to_string(ckpt.tensors.size() - kMaxListedNames) + " more)";
    return Status::InvalidArgument(message);
  }
  return ReRoot(ckpt, dict, options);
}

Status DropUnreachableStorages(torch::Checkpoint& ckpt) {
  const Graph& g = ckpt.graph;
  std::unordered_set<std::string> keys;
  Status bad;
  ForEachReachable(g, ckpt.root, [&](NodeId n) {
    if (g.kind(n) != Kind::kPersId || !bad.ok()) return;
    Result<std::optional<torch::StoragePid>> pid = torch::ParseStoragePid(g, n, ckpt.format);
    if (!pid.ok()) bad = pid.status();
    else if (pid->has_value()) keys.insert((*pid)->key);
  });
  ZF_TRY(bad);
  std::vector<uint32_t> index(ckpt.storages.size(), UINT32_MAX);
  std::vector<torch::Storage> kept;
  for (size_t s = 0; s < ckpt.storages.size(); ++s) {
    if (!keys.count(ckpt.storages[s].key)) continue;
    index[s] = static_cast<uint32_t>(kept.size());
    kept.push_back(std::move(ckpt.storages[s]));
  }
  for (torch::Tensor& t : ckpt.tensors) {
    if (t.storage >= index.size() || index[t.storage] == UINT32_MAX)
      return Status::Internal("tensor " + t.name + " views a storage its root does not reach");
    t.storage = index[t.storage];
  }
  ckpt.storages = std::move(kept);
  return Status::OK();
}

}  // namespace zerofold::model
