#include "ranks/values.h"

#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace zerofold::ranks {

namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::NodeId;
using pickle::kNoNode;

// Where torch 2.x keeps the DTensor classes (torch.distributed._tensor
// before 2.5).
constexpr std::string_view kPlacementModules[] = {"torch.distributed.tensor.placement_types",
                                                  "torch.distributed._tensor.placement_types"};
constexpr std::string_view kDTensorModules[] = {"torch.distributed.tensor", "torch.distributed.tensor._api",
                                                "torch.distributed._tensor.api"};

bool IsGlobalIn(const Graph& g, NodeId id, std::span<const std::string_view> modules, std::string_view name) {
  for (std::string_view m : modules)
    if (g.IsGlobal(id, m, name)) return true;
  return false;
}

class Reader {
 public:
  explicit Reader(const torch::Checkpoint& ckpt) : ckpt_(ckpt), g_(ckpt.graph) {
    for (size_t i = 0; i < ckpt.tensors.size(); ++i) tensor_of_.emplace(ckpt.tensors[i].node, i);
  }

  Result<std::vector<RankValue>> Run() {
    ZF_TRY(Walk(ckpt_.root, ""));
    return std::move(out_);
  }

 private:
  // A dict's entries flattened k, v: a dict, or an OrderedDict built by
  // REDUCE and SETITEMS. Empty for other nodes.
  std::optional<std::span<const NodeId>> Entries(NodeId id) const {
    if (id == kNoNode) return std::nullopt;
    if (g_.kind(id) == Kind::kDict) return g_.Items(id);
    if (g_.kind(id) == Kind::kObject && g_.IsGlobal(g_.Object(id).callable, "collections", "OrderedDict"))
      return std::span<const NodeId>(g_.Object(id).dict_items);
    return std::nullopt;
  }

  // The value of str key `key` in a dict node; kNoNode when absent.
  NodeId Field(NodeId dict, std::string_view key) const {
    std::optional<std::span<const NodeId>> items = Entries(dict);
    if (!items) return kNoNode;
    for (size_t i = 0; i + 1 < items->size(); i += 2)
      if (g_.kind((*items)[i]) == Kind::kStr && g_.AsStr((*items)[i]) == key) return (*items)[i + 1];
    return kNoNode;
  }

  // The BUILD state (a dict) of an object made by NEWOBJ of `cls`.
  Result<NodeId> StateOf(NodeId id, std::span<const std::string_view> modules, std::string_view cls) const {
    if (id == kNoNode || g_.kind(id) != Kind::kObject || !IsGlobalIn(g_, g_.Object(id).callable, modules, cls))
      return Bad("no " + std::string(cls));
    const NodeId state = g_.Object(id).state;
    if (state == kNoNode || g_.kind(state) != Kind::kDict) return Bad(std::string(cls) + " without a state dict");
    return state;
  }

  Result<std::vector<int64_t>> Ints(NodeId id, std::string_view what) const {
    if (id == kNoNode || (g_.kind(id) != Kind::kTuple && g_.kind(id) != Kind::kList)) return Bad(std::string(what) + " is no sequence");
    std::vector<int64_t> out;
    for (NodeId v : g_.Items(id)) {
      if (g_.kind(v) != Kind::kInt) return Bad(std::string(what) + " holds a non-integer");
      out.push_back(g_.AsInt(v));
    }
    return out;
  }

  Result<int64_t> Int(NodeId dict, std::string_view key) const {
    const NodeId v = Field(dict, key);
    if (v == kNoNode || g_.kind(v) != Kind::kInt) return Bad("no integer " + std::string(key));
    return g_.AsInt(v);
  }

  Status Bad(std::string why) const { return Status::Corrupt("DTensor: " + why).WithRecord(name_); }

  Status Walk(NodeId id, std::string prefix) {  // by value: name_ changes below
    if (!seen_.insert(id).second) return Status::OK();  // a shared or cyclic dict is walked once
    std::optional<std::span<const NodeId>> items = Entries(id);
    if (!items) return Status::Corrupt("the pickle's root is no dict").WithRecord("data.pkl");
    const std::vector<NodeId> entries(items->begin(), items->end());
    for (size_t i = 0; i + 1 < entries.size(); i += 2) {
      const NodeId k = entries[i], v = entries[i + 1];
      std::string key;
      if (g_.kind(k) == Kind::kStr) key = std::string(g_.AsStr(k));
      else if (g_.kind(k) == Kind::kInt) key = std::to_string(g_.AsInt(k));
      else continue;
      name_ = prefix.empty() ? key : prefix + "." + key;
      if (IsDTensor(v)) {
        ZF_TRY(ReadDTensor(v));
      } else if (auto t = tensor_of_.find(v); t != tensor_of_.end()) {
        const torch::Tensor& tensor = ckpt_.tensors[t->second];
        out_.push_back(RankValue{name_, false, t->second, tensor.dtype, tensor.shape, {}, {}, {}, {}});
      } else if (Entries(v)) {
        ZF_TRY(Walk(v, name_));
      }
    }
    return Status::OK();
  }

  bool IsDTensor(NodeId v) const {
    if (g_.kind(v) != Kind::kObject) return false;
    const pickle::ObjectData& o = g_.Object(v);
    if (!g_.IsGlobal(o.callable, "torch._tensor", "_rebuild_from_type_v2") || o.args == kNoNode ||
        g_.kind(o.args) != Kind::kTuple)
      return false;
    std::span<const NodeId> a = g_.Items(o.args);
    return a.size() == 4 && IsGlobalIn(g_, a[1], kDTensorModules, "DTensor");
  }

  Status ReadDTensor(NodeId v) {
    std::span<const NodeId> a = g_.Items(g_.Object(v).args);
    // DTensor has __slots__: its state is (None or __dict__, {slot: value}).
    NodeId state = a[3];
    if (g_.kind(state) == Kind::kTuple && g_.Items(state).size() == 2) state = g_.Items(state)[1];
    if (g_.kind(state) != Kind::kDict) return Bad("no state dict");
    RankValue r;
    r.name = name_;
    r.dtensor = true;
    const NodeId local = Field(state, "_local_tensor");
    auto t = tensor_of_.find(local);
    if (t == tensor_of_.end()) return Bad("no _local_tensor");
    r.tensor = t->second;
    ZF_ASSIGN_OR_RETURN(NodeId spec, StateOf(Field(state, "_spec"), kDTensorSpecModules, "DTensorSpec"));
    // The mesh: its ranks tensor's shape is the mesh's shape.
    ZF_ASSIGN_OR_RETURN(NodeId mesh, StateOf(Field(spec, "mesh"), kMeshModules, "DeviceMesh"));
    auto mt = tensor_of_.find(Field(mesh, "mesh"));
    if (mt == tensor_of_.end()) return Bad("a DeviceMesh without its mesh tensor");
    r.mesh_shape = ckpt_.tensors[mt->second].shape;
    const NodeId coords = Field(mesh, "_coordinate_on_dim");
    if (coords == kNoNode || g_.kind(coords) == Kind::kNone)
      return Bad("the DeviceMesh has no coordinate for the rank that saved it");
    ZF_ASSIGN_OR_RETURN(r.coords, Ints(coords, "_coordinate_on_dim"));
    const NodeId names = Field(mesh, "mesh_dim_names");
    if (names != kNoNode && (g_.kind(names) == Kind::kTuple || g_.kind(names) == Kind::kList))
      for (NodeId n : g_.Items(names))
        if (g_.kind(n) == Kind::kStr) r.mesh_dim_names.emplace_back(g_.AsStr(n));
    const NodeId placements = Field(spec, "placements");
    if (placements == kNoNode || g_.kind(placements) != Kind::kTuple) return Bad("no placements tuple");
    for (NodeId p : g_.Items(placements)) {
      ZF_ASSIGN_OR_RETURN(Placement pl, ReadPlacement(p));
      r.placements.push_back(pl);
    }
    const NodeId meta = Field(spec, "tensor_meta");
    if (meta == kNoNode || g_.kind(meta) == Kind::kNone) ZF_TRY(ReadWrapperArgs(a[2], &r));
    else ZF_TRY(ReadMeta(meta, &r));
    const torch::Tensor& lt = ckpt_.tensors[r.tensor];
    if (lt.dtype != r.dtype)
      return Bad("local tensor is " + std::string(torch::Info(lt.dtype).name) + ", its spec says " +
                 std::string(torch::Info(r.dtype).name));
    if (lt.shape.size() != r.shape.size())
      return Bad("local tensor of " + std::to_string(lt.shape.size()) + " dims, global shape " + torch::ShapeText(r.shape));
    out_.push_back(std::move(r));
    return Status::OK();
  }

  Result<Placement> ReadPlacement(NodeId p) const {
    if (g_.kind(p) != Kind::kObject) return Bad("a placement that is no object");
    const NodeId cls = g_.Object(p).callable;
    if (IsGlobalIn(g_, cls, kPlacementModules, "Replicate")) return Placement{PlacementKind::kReplicate, 0, 1};
    if (IsGlobalIn(g_, cls, kPlacementModules, "Partial") || IsGlobalIn(g_, cls, kPlacementModules, "_Partial"))
      return Placement{PlacementKind::kPartial, 0, 1};
    if (IsGlobalIn(g_, cls, kPlacementModules, "Shard")) {
      ZF_ASSIGN_OR_RETURN(NodeId s, StateOf(p, kPlacementModules, "Shard"));
      ZF_ASSIGN_OR_RETURN(int64_t dim, Int(s, "dim"));
      return Placement{PlacementKind::kShard, dim, 1};
    }
    if (IsGlobalIn(g_, cls, kPlacementModules, "_StridedShard")) {
      ZF_ASSIGN_OR_RETURN(NodeId s, StateOf(p, kPlacementModules, "_StridedShard"));
      ZF_ASSIGN_OR_RETURN(int64_t dim, Int(s, "dim"));
      ZF_ASSIGN_OR_RETURN(int64_t split, Int(s, "split_factor"));
      return Placement{PlacementKind::kStridedShard, dim, split};
    }
    std::string what = "?";
    if (cls != kNoNode && g_.kind(cls) == Kind::kGlobal)
      what = std::string(g_.GlobalModule(cls)) + "." + std::string(g_.GlobalName(cls));
    return Status::Unsupported("DTensor placement " + what + " (Shard, _StridedShard and Replicate are read)")
        .WithRecord(name_);
  }

  // A spec without tensor_meta: the global dtype and size from the
  // wrapper's args (DTensor, dtype, size, stride, storage_offset, ...).
  Status ReadWrapperArgs(NodeId args, RankValue* r) const {
    if (g_.kind(args) != Kind::kTuple || g_.Items(args).size() < 3) return Bad("no TensorMeta and no wrapper args");
    std::span<const NodeId> f = g_.Items(args);
    ZF_TRY(ReadDType(f[1], r));
    ZF_ASSIGN_OR_RETURN(r->shape, Ints(f[2], "size"));
    return Status::OK();
  }

  Status ReadDType(NodeId dtype, RankValue* r) const {
    if (g_.kind(dtype) != Kind::kGlobal || g_.GlobalModule(dtype) != "torch") return Bad("a dtype that is no torch dtype");
    std::optional<torch::DType> dt = torch::FromName(g_.GlobalName(dtype));
    if (!dt) return Status::Unsupported("DTensor of dtype torch." + std::string(g_.GlobalName(dtype))).WithRecord(name_);
    r->dtype = *dt;
    return Status::OK();
  }

  // TensorMeta(Size(shape), stride, dtype), a namedtuple built by REDUCE.
  Status ReadMeta(NodeId meta, RankValue* r) const {
    if (meta == kNoNode || g_.kind(meta) != Kind::kObject ||
        !IsGlobalIn(g_, g_.Object(meta).callable, kDTensorSpecModules, "TensorMeta"))
      return Bad("no TensorMeta");
    const NodeId args = g_.Object(meta).args;
    if (args == kNoNode || g_.kind(args) != Kind::kTuple || g_.Items(args).size() != 3) return Bad("TensorMeta of other fields");
    std::span<const NodeId> f = g_.Items(args);
    NodeId size = f[0];
    if (g_.kind(size) == Kind::kObject && g_.IsGlobal(g_.Object(size).callable, "torch", "Size")) {
      const NodeId sa = g_.Object(size).args;
      if (sa == kNoNode || g_.kind(sa) != Kind::kTuple || g_.Items(sa).size() != 1) return Bad("a torch.Size of other args");
      size = g_.Items(sa)[0];
    }
    ZF_ASSIGN_OR_RETURN(r->shape, Ints(size, "TensorMeta.shape"));
    return ReadDType(f[2], r);
  }

  static constexpr std::string_view kDTensorSpecModules[] = {"torch.distributed.tensor._dtensor_spec",
                                                             "torch.distributed._tensor.placement_types"};
  static constexpr std::string_view kMeshModules[] = {"torch.distributed.device_mesh",
                                                      "torch.distributed._tensor.device_mesh"};

  const torch::Checkpoint& ckpt_;
  const Graph& g_;
  std::unordered_map<NodeId, size_t> tensor_of_;
  std::unordered_set<NodeId> seen_;
  std::vector<RankValue> out_;
  std::string name_;
};

}  // namespace

Result<std::vector<RankValue>> FindValues(const torch::Checkpoint& ckpt) {
  Reader reader(ckpt);
  return reader.Run();
}

}  // namespace zerofold::ranks
