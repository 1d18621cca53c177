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
  // kStr, kBytes, kByteArray, kBigInt payload; a kGlobal's module.
  std::string_view AsStr(NodeId id) const { return strings_[nodes_[id].a]; }
  std::string_view GlobalModule(NodeId id) const { return strings_[nodes_[id].a]; }
  std::string_view GlobalName(NodeId id) const { return strings_[nodes_[id].b]; }
  // kTuple, kList, kSet, kFrozenSet elements; kDict entries flattened.
  std::span<const NodeId> Items(NodeId id) const { return lists_[nodes_[id].a]; }
  const ObjectData& Object(NodeId id) const { return objects_[nodes_[id].a]; }
  ObjectData& MutableObject(NodeId id) { return objects_[nodes_[id].a]; }
  // kPersId: the persistent id value.
  NodeId PersId(NodeId id) const { return static_cast<NodeId>(nodes_[id].i); }

  // True for a kGlobal with this module and name, or a kObject whose
  // callable is such a global (when `through_object`).
  bool IsGlobal(NodeId id, std::string_view module, std::string_view name) const;

  // Builders.
  NodeId AddNone();
  NodeId AddBool(bool v);
  NodeId AddInt(int64_t v);
  NodeId AddBigInt(std::string_view le_bytes);
  NodeId AddFloat(double v);
  NodeId AddStr(std::string_view utf8);
  NodeId AddBytes(std::string_view bytes, Kind kind = Kind::kBytes);
  NodeId AddGlobal(std::string_view module, std::string_view name);
  NodeId AddSequence(Kind kind, std::span<const NodeId> items);  // tuple, list, set, frozenset
  NodeId AddDict();
  NodeId AddObject(ObjectData data);
  NodeId AddPersId(NodeId pid);

  // Mutators. REQUIRES: kind fits (Append: list or set; SetItem: dict).
  void Append(NodeId list, NodeId item) { lists_[nodes_[list].a].push_back(item); }
  void SetItem(NodeId dict, NodeId key, NodeId value);  // appends an entry
  // Replaces element `index` of a tuple/list/set or flattened dict entry.
  void ReplaceItem(NodeId container, size_t index, NodeId item) { lists_[nodes_[container].a][index] = item; }
  void SetInt(NodeId id, int64_t v) { nodes_[id].i = v; }

  // Approximate heap bytes held (for memory accounting in tests/benchmarks).
  size_t ApproxBytes() const;

 private:
  struct Node {
    Kind kind;
    uint32_t a = 0;   // index into strings_, lists_ or objects_
    uint32_t b = 0;   // second string index (global name)
    int64_t i = 0;    // int, bool, float bits, persid target
  };
  NodeId Push(Node n);
  std::vector<Node> nodes_;
  std::vector<std::string> strings_;
  std::vector<std::vector<NodeId>> lists_;
  std::vector<ObjectData> objects_;
};

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_GRAPH_H_
