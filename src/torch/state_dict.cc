#include "torch/state_dict.h"

#include <map>
#include <string_view>
#include <utility>

#include "io/checked_math.h"
#include "pickle/encoder.h"
#include "pickle/graph.h"

namespace zerofold::torch {

namespace {

using pickle::Kind;
using pickle::NodeId;

// torch/serialization.py persistent_id and torch/_tensor.py
// _reduce_ex_internal (torch 1.13; the v3 form as torch 2.6 writes it).
constexpr std::string_view kStorageTag = "storage";
constexpr std::string_view kStorageModule = "torch.storage";
constexpr std::string_view kUntypedStorage = "UntypedStorage";
constexpr std::string_view kRebuildTensorV3 = "_rebuild_tensor_v3";
constexpr std::string_view kLocation = "cpu";
constexpr std::string_view kTorchModule = "torch";
constexpr std::string_view kUtilsModule = "torch._utils";
constexpr std::string_view kRebuildTensorV2 = "_rebuild_tensor_v2";
constexpr std::string_view kCollections = "collections";
constexpr std::string_view kOrderedDict = "OrderedDict";

NodeId Reduce(pickle::Graph& g, NodeId callable, NodeId args) {
  pickle::ObjectData o;
  o.op = pickle::ObjectOp::kReduce;
  o.callable = callable;
  o.args = args;
  return g.AddObject(std::move(o));
}

NodeId IntTuple(pickle::Graph& g, std::span<const int64_t> values) {
  std::vector<NodeId> items;
  items.reserve(values.size());
  for (int64_t v : values) items.push_back(g.AddInt(v));
  return g.AddSequence(Kind::kTuple, items);
}

}  // namespace

std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * std::max<int64_t>(shape[i], 1);
  return stride;
}

Result<StateDictGraph> BuildStateDict(std::span<const StateDictEntry> entries) {
  StateDictGraph out;
  pickle::Graph& g = out.graph;
  // CPython memoizes these objects on first use; later uses are BINGETs.
  const NodeId ordered_dict = g.AddGlobal(kCollections, kOrderedDict);
  const NodeId root = out.root = Reduce(g, ordered_dict, g.AddSequence(Kind::kTuple, {}));
  NodeId rebuild_v2 = pickle::kNoNode;
  NodeId rebuild_v3 = pickle::kNoNode;
  NodeId storage_tag = pickle::kNoNode;
  NodeId location = pickle::kNoNode;
  NodeId untyped = pickle::kNoNode;
  std::map<torch::DType, NodeId> storage_class;  // v2: torch.<X>Storage
  std::map<torch::DType, NodeId> dtype_global;   // v3: torch.<dtype>
  std::vector<NodeId> key_of(entries.size(), pickle::kNoNode);  // per data-holding entry

  for (size_t i = 0; i < entries.size(); ++i) {
    const StateDictEntry& e = entries[i];
    if (e.data > i || (e.data < i && (entries[e.data].data != e.data || entries[e.data].dtype != e.dtype ||
                                      entries[e.data].shape != e.shape)))
      return Status::InvalidArgument("entry " + e.name + " shares the data of entry " + std::to_string(e.data) +
                                     ", which is not an earlier data-holding entry of its dtype and shape");
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      std::optional<uint64_t> m;
      if (d >= 0) m = io::CheckedMul<uint64_t>(numel, static_cast<uint64_t>(d));
      if (!m) return Status::InvalidArgument("entry " + e.name + " has an invalid shape");
      numel = *m;
    }
    const torch::DTypeInfo& info = torch::Info(e.dtype);
    if (info.is_quantized)
      return Status::Unsupported("entry " + e.name + " has dtype " + std::string(info.name) +
                                 ", which torch.save writes through _rebuild_qtensor");
    std::optional<uint64_t> nbytes = io::CheckedMul<uint64_t>(numel, info.itemsize);
    if (!nbytes || !std::in_range<int64_t>(*nbytes))
      return Status::InvalidArgument("entry " + e.name + " has more than 2^63 bytes");

    // torch 2.6 _tensor.py _reduce_ex_internal lines 502-514: dtypes of
    // torch.storage._new_dtypes() go through _rebuild_tensor_v3 on the
    // tensor's UntypedStorage; the others through _rebuild_tensor_v2 on a
    // TypedStorage, pickled as its legacy class. torch 2.6's storage.py
    // _new_dtypes (lines 537-554) lists float8, bits, complex32 and
    // uint16/32/64; torch HEAD's adds float8_e8m0fnu and float4_e2m1fn_x2,
    // the dtypes here without a storage class.
    const bool v3 = info.storage_class.empty();
    NodeId& rebuild = v3 ? rebuild_v3 : rebuild_v2;
    if (rebuild == pickle::kNoNode) rebuild = g.AddGlobal(kUtilsModule, v3 ? kRebuildTensorV3 : kRebuildTensorV2);
    if (storage_tag == pickle::kNoNode) storage_tag = g.AddStr(kStorageTag);
    NodeId cls_node;
    if (v3) {
      if (untyped == pickle::kNoNode) untyped = g.AddGlobal(kStorageModule, kUntypedStorage);
      cls_node = untyped;
    } else {
      auto cls = storage_class.find(e.dtype);
      if (cls == storage_class.end())
        cls = storage_class.emplace(e.dtype, g.AddGlobal(kTorchModule, info.storage_class)).first;
      cls_node = cls->second;
    }
    NodeId key = key_of[e.data];
    bool fresh = key == pickle::kNoNode;
    if (fresh) {
      std::string k = std::to_string(out.storages.size());
      key = key_of[e.data] = g.AddStr(k);
      out.storages.push_back({k, *nbytes});
      out.storage_entry.push_back(i);
    }
    if (location == pickle::kNoNode) location = g.AddStr(kLocation);
    // serialization.py persistent_id lines 1143-1156: a TypedStorage's
    // numel counts elements, an UntypedStorage's bytes.
    std::vector<NodeId> pid_items = {storage_tag, cls_node, key, location,
                                     g.AddInt(static_cast<int64_t>(v3 ? *nbytes : numel))};
    NodeId pid = g.AddPersId(g.AddSequence(Kind::kTuple, pid_items));
    std::vector<int64_t> stride = ContiguousStrides(e.shape);
    NodeId hooks = Reduce(g, ordered_dict, g.AddSequence(Kind::kTuple, {}));
    std::vector<NodeId> args = {pid, g.AddInt(0), IntTuple(g, e.shape), IntTuple(g, stride), g.AddBool(false), hooks};
    if (v3) {  // _tensor.py lines 534-535: an UntypedStorage's args end with the dtype
      auto dt = dtype_global.find(e.dtype);
      if (dt == dtype_global.end()) dt = dtype_global.emplace(e.dtype, g.AddGlobal(kTorchModule, info.name)).first;
      args.push_back(dt->second);
    }
    NodeId args_tuple = g.AddSequence(Kind::kTuple, args);
    NodeId tensor = Reduce(g, rebuild, args_tuple);
    out.entries.push_back({tensor, args_tuple, pid});
    pickle::ObjectData& od = g.MutableObject(root);
    od.dict_items.push_back(g.AddStr(e.name));
    od.dict_items.push_back(tensor);
  }
  return out;
}

Result<StateDictPickle> EncodeStateDict(std::span<const StateDictEntry> entries) {
  ZF_ASSIGN_OR_RETURN(StateDictGraph built, BuildStateDict(entries));
  StateDictPickle out;
  ZF_ASSIGN_OR_RETURN(out.data_pkl, pickle::Encode(built.graph, built.root));
  out.storages = std::move(built.storages);
  out.storage_entry = std::move(built.storage_entry);
  return out;
}

}  // namespace zerofold::torch
