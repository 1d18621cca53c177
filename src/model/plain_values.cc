#include "model/plain_values.h"

#include <cmath>
#include <string>
#include <vector>

#include "json/writer.h"
#include "model/graph_children.h"
#include "safetensors/format.h"
#include "torch/format.h"

namespace zerofold::model {

namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::kNoNode;
using pickle::NodeId;

constexpr int kMaxPlainDepth = 1000;
// JSON text written for all values together, counted as it is written (a
// number as 24 bytes, a str or key as its length plus 2): what a header the
// safetensors reference reads can hold. Shared subgraphs can make a 1 KB
// pickle's values terabytes of text; a value past the budget is skipped.
constexpr uint64_t kPlainTextBudget = safetensors::kMaxHeaderSize;
constexpr uint64_t kNumberCost = 24;

// holder[n]: a tensor node is reachable from n. Computed backwards from the
// tensor nodes over reversed edges, so cycles and shared subgraphs are fine.
std::vector<bool> Holders(const torch::Checkpoint& ckpt) {
  const Graph& g = ckpt.graph;
  std::vector<std::vector<NodeId>> parents(g.size());
  for (NodeId n = 0; n < g.size(); ++n)
    ForEachChild(g, n, [&](NodeId c) {
      if (c < g.size()) parents[c].push_back(n);
    });
  std::vector<bool> holder(g.size(), false);
  std::vector<NodeId> queue;
  for (const torch::Tensor& t : ckpt.tensors)
    if (t.node < g.size() && !holder[t.node]) {
      holder[t.node] = true;
      queue.push_back(t.node);
    }
  while (!queue.empty()) {
    NodeId n = queue.back();
    queue.pop_back();
    for (NodeId p : parents[n])
      if (!holder[p]) {
        holder[p] = true;
        queue.push_back(p);
      }
  }
  return holder;
}

// torch.Size((d0, d1, ...)): its tuple.
NodeId SizeTuple(const Graph& g, NodeId n) {
  if (g.kind(n) != Kind::kObject) return kNoNode;
  const pickle::ObjectData& obj = g.Object(n);
  if (!g.IsGlobal(obj.callable, torch::kTorchModule, torch::kSizeClass) || obj.args == kNoNode ||
      g.kind(obj.args) != Kind::kTuple || g.Items(obj.args).size() != 1 || obj.state != kNoNode)
    return kNoNode;
  NodeId t = g.Items(obj.args)[0];
  return g.kind(t) == Kind::kTuple ? t : kNoNode;
}

// Takes `cost` from `budget`; false when it has less.
bool Spend(uint64_t cost, uint64_t& budget) {
  if (cost > budget) return false;
  budget -= cost;
  return true;
}

// Writes n as JSON, spending from `budget`; false if it is not plain data or
// the budget runs out (w is then unusable).
bool WritePlain(const Graph& g, NodeId n, json::Writer& w, int depth, uint64_t& budget) {
  if (depth > kMaxPlainDepth) return false;
  if (!Spend(g.kind(n) == Kind::kStr ? g.AsStr(n).size() + 2 : kNumberCost, budget)) return false;
  switch (g.kind(n)) {
    case Kind::kNone: w.Null(); return true;
    case Kind::kBool: w.Bool(g.AsBool(n)); return true;
    case Kind::kInt: w.Int(g.AsInt(n)); return true;
    case Kind::kFloat:
      if (!std::isfinite(g.AsFloat(n))) return false;
      w.Double(g.AsFloat(n));
      return true;
    case Kind::kStr: w.String(g.AsStr(n)); return true;
    case Kind::kList:
    case Kind::kTuple:
      w.BeginArray();
      for (NodeId c : g.Items(n))
        if (!WritePlain(g, c, w, depth + 1, budget)) return false;
      w.EndArray();
      return true;
    case Kind::kDict:
    case Kind::kObject: {
      if (NodeId size = SizeTuple(g, n); size != kNoNode) return WritePlain(g, size, w, depth + 1, budget);
      if (g.kind(n) == Kind::kObject && !IsOrderedDict(g, n)) return false;
      std::vector<NodeId> e = MappingEntries(g, n);
      w.BeginObject();
      for (size_t i = 0; i + 1 < e.size(); i += 2) {
        if (g.kind(e[i]) == Kind::kStr) {
          if (!Spend(g.AsStr(e[i]).size() + 2, budget)) return false;
          w.Key(g.AsStr(e[i]));
        } else if (g.kind(e[i]) == Kind::kInt) {
          w.Key(std::to_string(g.AsInt(e[i])));
        } else {
          return false;
        }
        if (!WritePlain(g, e[i + 1], w, depth + 1, budget)) return false;
      }
      w.EndObject();
      return true;
    }
    default: return false;
  }
}

class Collector {
 public:
  explicit Collector(const torch::Checkpoint& ckpt)
      : g_(ckpt.graph), holder_(Holders(ckpt)), on_path_(g_.size()), tensor_(g_.size()) {
    for (const torch::Tensor& t : ckpt.tensors)
      if (t.node < g_.size()) tensor_[t.node] = true;
  }

  PlainValues Run(NodeId root) {
    if (root < g_.size()) Visit(root, "", 0);
    return std::move(out_);
  }

 private:
  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  void Leaf(NodeId n, const std::string& path) {
    json::Writer w;
    uint64_t budget = budget_;
    if (WritePlain(g_, n, w, 0, budget)) {
      Result<std::string> text = w.Finish();  // fails on a str that is not UTF-8
      if (text.ok()) {
        budget_ = budget;
        out_.entries.emplace_back(path, *text);
        return;
      }
    }
    out_.skipped.push_back(path);
  }

  void Visit(NodeId n, const std::string& path, int depth) {
    const Kind kind = g_.kind(n);
    const bool dict = kind == Kind::kDict || IsOrderedDict(g_, n);
    const bool sequence = kind == Kind::kList || kind == Kind::kTuple;
    // The root container is walked even without tensors (a state dict that
    // --only emptied): its values keep their own names, none is named "".
    if (!holder_[n] && !(depth == 0 && (dict || sequence))) return Leaf(n, path);
    if (on_path_[n] || depth > kMaxPlainDepth) return;
    if (!dict && !sequence) {
      // A tensor, or an object that holds tensors: its tensors are named by
      // the recognizer; anything else in an object cannot be kept.
      if (kind == Kind::kObject && !tensor_[n]) out_.skipped.push_back(path);
      return;
    }
    on_path_[n] = true;
    if (dict) {
      std::vector<NodeId> e = MappingEntries(g_, n);
      for (size_t i = 0; i + 1 < e.size(); i += 2) {
        std::string key;
        if (g_.kind(e[i]) == Kind::kStr) key = g_.AsStr(e[i]);
        else if (g_.kind(e[i]) == Kind::kInt) key = std::to_string(g_.AsInt(e[i]));
        else key = "<key " + std::to_string(i / 2) + ">";  // a key that is no str or int
        Visit(e[i + 1], Join(path, key), depth + 1);
      }
    } else {
      std::span<const NodeId> items = g_.Items(n);
      for (size_t i = 0; i < items.size(); ++i) Visit(items[i], Join(path, std::to_string(i)), depth + 1);
    }
    on_path_[n] = false;
  }

 private:
  const Graph& g_;
  std::vector<bool> holder_;
  std::vector<bool> on_path_;
  std::vector<bool> tensor_;  // the node is a tensor (or Parameter)
  uint64_t budget_ = kPlainTextBudget;  // text the values written so far left
  PlainValues out_;
};

}  // namespace

PlainValues CollectPlainValues(const torch::Checkpoint& ckpt) {
  return Collector(ckpt).Run(ckpt.root);
}

}  // namespace zerofold::model
