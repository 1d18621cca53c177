#include "pickle/graph.h"

#include <cstring>

namespace zerofold::pickle {

Graph::Graph() = default;

double Graph::AsFloat(NodeId id) const {
  double d;
  std::memcpy(&d, &nodes_[id].i, sizeof d);
  return d;
}

bool Graph::IsGlobal(NodeId id, std::string_view module, std::string_view name) const {
  if (id == kNoNode || id >= nodes_.size()) return false;
  if (kind(id) != Kind::kGlobal) return false;
  return GlobalModule(id) == module && GlobalName(id) == name;
}

NodeId Graph::Push(Node n) {
  nodes_.push_back(n);
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId Graph::AddNone() { return Push({Kind::kNone}); }
NodeId Graph::AddBool(bool v) { return Push({Kind::kBool, 0, 0, v ? 1 : 0}); }
NodeId Graph::AddInt(int64_t v) { return Push({Kind::kInt, 0, 0, v}); }

NodeId Graph::AddBigInt(std::string_view le_bytes) {
  strings_.emplace_back(le_bytes);
  return Push({Kind::kBigInt, static_cast<uint32_t>(strings_.size() - 1)});
}

NodeId Graph::AddFloat(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof v);
  return Push({Kind::kFloat, 0, 0, bits});
}

NodeId Graph::AddStr(std::string_view utf8) {
  strings_.emplace_back(utf8);
  return Push({Kind::kStr, static_cast<uint32_t>(strings_.size() - 1)});
}

NodeId Graph::AddBytes(std::string_view bytes, Kind kind) {
  strings_.emplace_back(bytes);
  return Push({kind, static_cast<uint32_t>(strings_.size() - 1)});
}

NodeId Graph::AddGlobal(std::string_view module, std::string_view name) {
  strings_.emplace_back(module);
  strings_.emplace_back(name);
  uint32_t b = static_cast<uint32_t>(strings_.size() - 1);
  return Push({Kind::kGlobal, b - 1, b});
}

NodeId Graph::AddSequence(Kind kind, std::span<const NodeId> items) {
  lists_.emplace_back(items.begin(), items.end());
  return Push({kind, static_cast<uint32_t>(lists_.size() - 1)});
}

NodeId Graph::AddDict() {
  lists_.emplace_back();
  return Push({Kind::kDict, static_cast<uint32_t>(lists_.size() - 1)});
}

void Graph::SetItem(NodeId dict, NodeId key, NodeId value) {
  std::vector<NodeId>& entries = lists_[nodes_[dict].a];
  entries.push_back(key);
  entries.push_back(value);
}

NodeId Graph::AddObject(ObjectData data) {
  objects_.push_back(std::move(data));
  return Push({Kind::kObject, static_cast<uint32_t>(objects_.size() - 1)});
}

NodeId Graph::AddPersId(NodeId pid) { return Push({Kind::kPersId, 0, 0, static_cast<int64_t>(pid)}); }

size_t Graph::ApproxBytes() const {
  size_t total = nodes_.capacity() * sizeof(Node) + strings_.capacity() * sizeof(std::string) +
                 lists_.capacity() * sizeof(std::vector<NodeId>) + objects_.capacity() * sizeof(ObjectData);
  for (const std::string& s : strings_)
    if (s.capacity() > 15) total += s.capacity() + 1;
  for (const auto& l : lists_) total += l.capacity() * sizeof(NodeId);
  return total;
}

}  // namespace zerofold::pickle
