// Every node a pickle graph node refers to, for walks over the whole graph
// (what torch.load would build from it), whatever the node's kind.
#ifndef ZEROFOLD_MODEL_GRAPH_CHILDREN_H_
#define ZEROFOLD_MODEL_GRAPH_CHILDREN_H_

#include <vector>

#include "pickle/graph.h"
#include "torch/format.h"

namespace zerofold::model {

// Calls fn(child) for each node `n` refers to: items of sequences, keys and
// values of dicts, the callable, arguments, state and appended items of
// objects, the value of a persistent id. Children may repeat; cycles are
// the caller's concern.
template <typename Fn>
void ForEachChild(const pickle::Graph& g, pickle::NodeId n, Fn&& fn) {
  using pickle::Kind;
  switch (g.kind(n)) {
    case Kind::kTuple:
    case Kind::kList:
    case Kind::kSet:
    case Kind::kFrozenSet:
    case Kind::kDict:
      for (pickle::NodeId c : g.Items(n)) fn(c);
      return;
    case Kind::kObject: {
      const pickle::ObjectData& o = g.Object(n);
      for (pickle::NodeId c : {o.callable, o.args, o.kwargs, o.state})
        if (c != pickle::kNoNode) fn(c);
      for (pickle::NodeId c : o.list_items) fn(c);
      for (pickle::NodeId c : o.dict_items) fn(c);
      return;
    }
    case Kind::kPersId:
      if (g.PersId(n) != pickle::kNoNode) fn(g.PersId(n));
      return;
    default:
      return;
  }
}

inline bool IsOrderedDict(const pickle::Graph& g, pickle::NodeId n) {
  return g.kind(n) == pickle::Kind::kObject &&
         g.IsGlobal(g.Object(n).callable, torch::kCollectionsModule, torch::kOrderedDictClass);
}

// The entries of a dict or collections.OrderedDict, flattened k0, v0, k1,
// v1, ...: an OrderedDict's items set on it (SETITEMS) after those given as
// OrderedDict([[k, v], ...]), the form protocols 0 and 1 write.
// REQUIRES: kind(n) == kDict or IsOrderedDict(g, n).
inline std::vector<pickle::NodeId> MappingEntries(const pickle::Graph& g, pickle::NodeId n) {
  using pickle::Kind;
  if (g.kind(n) == Kind::kDict) {
    std::span<const pickle::NodeId> items = g.Items(n);
    return std::vector<pickle::NodeId>(items.begin(), items.end());
  }
  const pickle::ObjectData& obj = g.Object(n);
  std::vector<pickle::NodeId> out;
  if (obj.args != pickle::kNoNode && g.kind(obj.args) == Kind::kTuple && g.Items(obj.args).size() == 1 &&
      g.kind(g.Items(obj.args)[0]) == Kind::kList) {
    for (pickle::NodeId pair : g.Items(g.Items(obj.args)[0]))
      if ((g.kind(pair) == Kind::kList || g.kind(pair) == Kind::kTuple) && g.Items(pair).size() == 2) {
        out.push_back(g.Items(pair)[0]);
        out.push_back(g.Items(pair)[1]);
      }
  }
  out.insert(out.end(), obj.dict_items.begin(), obj.dict_items.end());
  return out;
}

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_GRAPH_CHILDREN_H_
