// The value graph a pickle decodes into, and an encoder writes back.
//
// Nodes live in one Graph and are named by NodeId. Shared references stay
// shared: a memo hit (BINGET) yields the same NodeId, so a tensor or string
// referenced twice is one node; cycles are possible and every traversal must
// guard against them. Nothing here imports or calls anything: a global is a
// (module, name) pair, a REDUCE is a recorded call that never runs.
//
// Compact on purpose: a node is 16 bytes; strings and child lists live in
// side tables. Lifetime: NodeIds are valid for the Graph's lifetime; span and
// string_view results are invalidated by any mutation of the graph.
#ifndef ZEROFOLD_PICKLE_GRAPH_H_
#define ZEROFOLD_PICKLE_GRAPH_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zerofold::pickle {

using NodeId = uint32_t;
constexpr NodeId kNoNode = UINT32_MAX;

enum class Kind : uint8_t {
  kNone,
  kBool,
  kInt,        // fits in int64
  kBigInt,     // two's complement little-endian bytes (LONG1/LONG4 payload)
  kFloat,
  kStr,        // UTF-8
  kBytes,      // protocol 3+ bytes
  kByteArray,  // protocol 5 bytearray
  kTuple,
  kList,
  kDict,       // entries flattened k0, v0, k1, v1, ... in insertion order
  kSet,
  kFrozenSet,
  kGlobal,     // module + name
  kObject,     // result of REDUCE / NEWOBJ / NEWOBJ_EX / INST / OBJ
  kPersId,     // BINPERSID / PERSID: the persistent id value; resolved by the torch layer
};

// How an object node was built, so the encoder can write it the same way.
enum class ObjectOp : uint8_t {
  kReduce,    // callable(*args)
  kNewObj,    // cls.__new__(cls, *args)
  kNewObjEx,  // cls.__new__(cls, *args, **kwargs)
  kInst,      // protocol 0/1 INST or OBJ
};

struct ObjectData {
  ObjectOp op = ObjectOp::kReduce;
  NodeId callable = kNoNode;  // a kGlobal usually, but any node
  NodeId args = kNoNode;      // a tuple usually
  NodeId kwargs = kNoNode;    // kNewObjEx only
  NodeId state = kNoNode;     // BUILD argument, kNoNode when never built
  std::vector<NodeId> list_items;  // APPEND(S) onto this object
  std::vector<NodeId> dict_items;  // SETITEM(S) onto this object, flattened k, v
};

class Graph {
 public:
  Graph();

  size_t size() const { return nodes_.size(); }
  Kind kind(NodeId id) const { return nodes_[id].kind; }

  // Accessors. REQUIRES: the node has the kind named.
  bool AsBool(NodeId id) const { return nodes_[id].i != 0; }
  int64_t AsInt(NodeId id) const { return nodes_[id].i; }
  double AsFloat(NodeId id) const;
  // kStr, kBytes, kByteArray, kBigInt payload.
  std::string_view AsStr(NodeId id) const {
    return {chars_.data() + nodes_[id].i, nodes_[id].a};
  }
  std::string_view GlobalModule(NodeId id) const {
    const GlobalRef& g = globals_[nodes_[id].a];
    return {chars_.data() + g.offset, g.module_size};
  }
  std::string_view GlobalName(NodeId id) const {
    const GlobalRef& g = globals_[nodes_[id].a];
    return {chars_.data() + g.offset + g.module_size, g.name_size};
  }
  // kTuple, kList, kSet, kFrozenSet elements; kDict entries flattened.
  std::span<const NodeId> Items(NodeId id) const {
    const Node& n = nodes_[id];
    if (IsFrozen(n.kind)) return {items_.data() + n.i, n.a};
    return lists_[n.a];
  }
  const ObjectData& Object(NodeId id) const { return objects_[nodes_[id].a]; }
  ObjectData& MutableObject(NodeId id) { return objects_[nodes_[id].a]; }
  // kPersId: the persistent id value.
  NodeId PersId(NodeId id) const { return static_cast<NodeId>(nodes_[id].i); }

  // True for a kGlobal with this module and name (false for kNoNode).
  bool IsGlobal(NodeId id, std::string_view module, std::string_view name) const;

  // Builders. REQUIRES: string payloads under 4 GiB (the decoder refuses
  // larger ones with kUnsupported before building).
  NodeId AddNone() { return Push(Kind::kNone, 0, 0); }
  NodeId AddBool(bool v) { return Push(Kind::kBool, 0, v ? 1 : 0); }
  NodeId AddInt(int64_t v) { return Push(Kind::kInt, 0, v); }
  NodeId AddBigInt(std::string_view le_bytes);
  NodeId AddFloat(double v);
  NodeId AddStr(std::string_view utf8);
  NodeId AddBytes(std::string_view bytes, Kind kind = Kind::kBytes);
  NodeId AddGlobal(std::string_view module, std::string_view name);
  // tuple, list, set, frozenset; also kDict with `items` flattened k, v.
  NodeId AddSequence(Kind kind, std::span<const NodeId> items);
  NodeId AddDict();
  NodeId AddObject(ObjectData data);
  NodeId AddPersId(NodeId pid);

  // Mutators. REQUIRES: kind fits (Append: list or set; Extend: list, set,
  // or dict with `items` flattened k, v; SetItem: dict). Items may come from
  // this graph (Items() of another node).
  void Append(NodeId list, NodeId item) { lists_[nodes_[list].a].push_back(item); }
  void Extend(NodeId container, std::span<const NodeId> items);
  void SetItem(NodeId dict, NodeId key, NodeId value);  // appends an entry
  // Replaces element `index` of a tuple/list/set or flattened dict entry.
  void ReplaceItem(NodeId container, size_t index, NodeId item);
  void SetInt(NodeId id, int64_t v) { nodes_[id].i = v; }

  // Capacity hints; no effect on contents.
  void Reserve(size_t nodes, size_t chars, size_t frozen_items);

  // Approximate heap bytes held (for memory accounting in tests/benchmarks).
  size_t ApproxBytes() const;

 private:
  // Scalars keep their value in `i`. Strings, bytes and big ints are `a`
  // bytes at offset `i` of chars_. Tuples and frozensets (immutable) are `a`
  // ids at offset `i` of items_; lists, dicts and sets grow, so each has its
  // own vector, lists_[a]. Globals are globals_[a]; objects objects_[a].
  struct Node {
    Kind kind = Kind::kNone;
    uint32_t a = 0;
    int64_t i = 0;
  };
  static_assert(sizeof(Node) == 16, "a graph node is 16 bytes");
  struct GlobalRef {
    uint64_t offset;  // module then name, adjacent in chars_
    uint32_t module_size;
    uint32_t name_size;
  };
  static bool IsFrozen(Kind k) { return k == Kind::kTuple || k == Kind::kFrozenSet; }
  NodeId Push(Kind kind, uint32_t a, int64_t i) {
    nodes_.push_back(Node{kind, a, i});
    return static_cast<NodeId>(nodes_.size() - 1);
  }
  uint64_t AddChars(std::string_view s);
  std::vector<Node> nodes_;
  std::vector<char> chars_;
  std::vector<NodeId> items_;
  std::vector<std::vector<NodeId>> lists_;
  std::vector<GlobalRef> globals_;
  std::vector<ObjectData> objects_;
};

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_GRAPH_H_
