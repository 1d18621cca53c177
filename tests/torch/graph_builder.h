// Test helper: builds pickle graphs the way the decoder would for torch
// pickles, node by node, in document order.
#ifndef ZEROFOLD_TESTS_TORCH_GRAPH_BUILDER_H_
#define ZEROFOLD_TESTS_TORCH_GRAPH_BUILDER_H_

#include <initializer_list>
#include <string_view>
#include <vector>

#include "pickle/graph.h"

namespace zerofold::torch::testing {

using pickle::NodeId;

struct GraphBuilder {
  pickle::Graph g;

  NodeId Str(std::string_view s) { return g.AddStr(s); }
  NodeId Int(int64_t v) { return g.AddInt(v); }
  NodeId Bool(bool v) { return g.AddBool(v); }
  NodeId None() { return g.AddNone(); }
  NodeId Global(std::string_view module, std::string_view name) { return g.AddGlobal(module, name); }
  NodeId Tuple(std::initializer_list<NodeId> items) {
    return g.AddSequence(pickle::Kind::kTuple, std::vector<NodeId>(items));
  }
  NodeId List(std::initializer_list<NodeId> items) {
    return g.AddSequence(pickle::Kind::kList, std::vector<NodeId>(items));
  }
  NodeId Ints(std::initializer_list<int64_t> values) {
    std::vector<NodeId> items;
    for (int64_t v : values) items.push_back(Int(v));
    return g.AddSequence(pickle::Kind::kTuple, items);
  }
  NodeId Dict(std::initializer_list<std::pair<NodeId, NodeId>> entries) {
    NodeId d = g.AddDict();
    for (auto [k, v] : entries) g.SetItem(d, k, v);
    return d;
  }
  NodeId Reduce(NodeId callable, NodeId args) {
    pickle::ObjectData o;
    o.callable = callable;
    o.args = args;
    return g.AddObject(std::move(o));
  }
  // collections.OrderedDict() with SETITEMS.
  NodeId OrderedDict(std::initializer_list<std::pair<NodeId, NodeId>> entries) {
    NodeId od = Reduce(Global("collections", "OrderedDict"), Tuple({}));
    for (auto [k, v] : entries) {
      g.MutableObject(od).dict_items.push_back(k);
      g.MutableObject(od).dict_items.push_back(v);
    }
    return od;
  }
  // ('storage', module.cls, key, location, numel[, None]) behind BINPERSID.
  NodeId Pid(std::string_view cls, std::string_view key, int64_t numel, bool legacy = false,
             std::string_view module = "torch") {
    NodeId tag = Str("storage");
    NodeId c = Global(module, cls);
    NodeId k = Str(key);
    NodeId loc = Str("cpu");
    NodeId n = Int(numel);
    NodeId t = legacy ? Tuple({tag, c, k, loc, n, None()}) : Tuple({tag, c, k, loc, n});
    return g.AddPersId(t);
  }
  NodeId Hooks() { return Reduce(Global("collections", "OrderedDict"), Tuple({})); }
  NodeId TensorV2(NodeId pid, int64_t offset, std::initializer_list<int64_t> size,
                  std::initializer_list<int64_t> stride, bool requires_grad = false) {
    NodeId args = Tuple({pid, Int(offset), Ints(size), Ints(stride), Bool(requires_grad), Hooks()});
    return Reduce(Global("torch._utils", "_rebuild_tensor_v2"), args);
  }
  NodeId TensorV3(NodeId pid, int64_t offset, std::initializer_list<int64_t> size,
                  std::initializer_list<int64_t> stride, std::string_view dtype) {
    NodeId args = Tuple({pid, Int(offset), Ints(size), Ints(stride), Bool(false), Hooks(), Global("torch", dtype)});
    return Reduce(Global("torch._utils", "_rebuild_tensor_v3"), args);
  }
  NodeId Parameter(NodeId data, bool requires_grad = true) {
    return Reduce(Global("torch._utils", "_rebuild_parameter"), Tuple({data, Bool(requires_grad), Hooks()}));
  }
};

}  // namespace zerofold::torch::testing

#endif  // ZEROFOLD_TESTS_TORCH_GRAPH_BUILDER_H_
