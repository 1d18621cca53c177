// Every node a pickle graph node refers to, for walks over the whole graph
// (what torch.load would build from it), whatever the node's kind.
#ifndef ZEROFOLD_OPS_GRAPH_CHILDREN_H_
#define ZEROFOLD_OPS_GRAPH_CHILDREN_H_

#include "pickle/graph.h"

namespace zerofold::ops {

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

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_GRAPH_CHILDREN_H_
