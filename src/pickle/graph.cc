#include "pickle/graph.h"

#include <cstring>

namespace zerofold::pickle {

namespace {

// True if `part` lies inside `whole` (so appending it to `whole` would read
// from storage the append may move).
template <typename T>
bool Aliases(const std::vector<T>& whole, const T* part) {
  return !whole.empty() && part >= whole.data() && part < whole.data() + whole.size();
}

}  // namespace

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

uint64_t Graph::AddChars(std::string_view s) {
  uint64_t offset = chars_.size();
  if (Aliases(chars_, s.data())) {
    std::string copy(s);
    chars_.insert(chars_.end(), copy.begin(), copy.end());
  } else {
    chars_.insert(chars_.end(), s.begin(), s.end());
  }
  return offset;
}

NodeId Graph::AddBigInt(std::string_view le_bytes) { return AddBytes(le_bytes, Kind::kBigInt); }

NodeId Graph::AddFloat(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof v);
  return Push(Kind::kFloat, 0, bits);
}

NodeId Graph::AddStr(std::string_view utf8) { return AddBytes(utf8, Kind::kStr); }

NodeId Graph::AddBytes(std::string_view bytes, Kind kind) {
  uint64_t offset = AddChars(bytes);
  return Push(kind, static_cast<uint32_t>(bytes.size()), static_cast<int64_t>(offset));
}

NodeId Graph::AddGlobal(std::string_view module, std::string_view name) {
  uint64_t offset = AddChars(module);
  AddChars(name);
  globals_.push_back(GlobalRef{offset, static_cast<uint32_t>(module.size()),
                               static_cast<uint32_t>(name.size())});
  return Push(Kind::kGlobal, static_cast<uint32_t>(globals_.size() - 1), 0);
}

NodeId Graph::AddSequence(Kind kind, std::span<const NodeId> items) {
  if (IsFrozen(kind)) {
    uint64_t offset = items_.size();
    if (Aliases(items_, items.data())) {
      std::vector<NodeId> copy(items.begin(), items.end());
      items_.insert(items_.end(), copy.begin(), copy.end());
    } else {
      items_.insert(items_.end(), items.begin(), items.end());
    }
    return Push(kind, static_cast<uint32_t>(items.size()), static_cast<int64_t>(offset));
  }
  lists_.emplace_back(items.begin(), items.end());
  return Push(kind, static_cast<uint32_t>(lists_.size() - 1), 0);
}

NodeId Graph::AddDict() { return AddSequence(Kind::kDict, {}); }

void Graph::Extend(NodeId container, std::span<const NodeId> items) {
  std::vector<NodeId>& list = lists_[nodes_[container].a];
  if (Aliases(list, items.data())) {
    std::vector<NodeId> copy(items.begin(), items.end());
    list.insert(list.end(), copy.begin(), copy.end());
  } else {
    list.insert(list.end(), items.begin(), items.end());
  }
}

void Graph::SetItem(NodeId dict, NodeId key, NodeId value) {
  std::vector<NodeId>& entries = lists_[nodes_[dict].a];
  entries.push_back(key);
  entries.push_back(value);
}

void Graph::ReplaceItem(NodeId container, size_t index, NodeId item) {
  const Node& n = nodes_[container];
  if (IsFrozen(n.kind)) {
    items_[n.i + index] = item;
  } else {
    lists_[n.a][index] = item;
  }
}

NodeId Graph::AddObject(ObjectData data) {
  objects_.push_back(std::move(data));
  return Push(Kind::kObject, static_cast<uint32_t>(objects_.size() - 1), 0);
}

NodeId Graph::AddPersId(NodeId pid) { return Push(Kind::kPersId, 0, static_cast<int64_t>(pid)); }

void Graph::Reserve(size_t nodes, size_t chars, size_t frozen_items) {
  nodes_.reserve(nodes);
  chars_.reserve(chars);
  items_.reserve(frozen_items);
}

size_t Graph::ApproxBytes() const {
  size_t total = nodes_.capacity() * sizeof(Node) + chars_.capacity() + items_.capacity() * sizeof(NodeId) +
                 lists_.capacity() * sizeof(std::vector<NodeId>) + globals_.capacity() * sizeof(GlobalRef) +
                 objects_.capacity() * sizeof(ObjectData);
  for (const auto& l : lists_) total += l.capacity() * sizeof(NodeId);
  for (const ObjectData& o : objects_)
    total += (o.list_items.capacity() + o.dict_items.capacity()) * sizeof(NodeId);
  return total;
}

}  // namespace zerofold::pickle
