#include "zero/extract.h"

#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace zerofold::zero {
namespace {

using pickle::Kind;
using pickle::NodeId;
using pickle::kNoNode;

// DeepSpeed's keys (deepspeed/checkpoint/constants.py, runtime/engine.py).
constexpr std::string_view kModule = "module";
constexpr std::string_view kBufferNames = "buffer_names";
constexpr std::string_view kParamShapes = "param_shapes";
constexpr std::string_view kFrozenParamShapes = "frozen_param_shapes";
constexpr std::string_view kFrozenParamFragments = "frozen_param_fragments";
constexpr std::string_view kSharedParams = "shared_params";
constexpr std::string_view kOptimizer = "optimizer";
constexpr std::string_view kDpWorldSize = "dp_world_size";
constexpr std::string_view kDsVersion = "ds_version";
constexpr std::string_view kOptimizerStateDict = "optimizer_state_dict";
constexpr std::string_view kZeroStage = "zero_stage";
constexpr std::string_view kPartitionCount = "partition_count";
constexpr std::string_view kSinglePartitionOfFp32Groups = "single_partition_of_fp32_groups";
constexpr std::string_view kFp32FlatGroups = "fp32_flat_groups";
constexpr std::string_view kLocalSubPartitionsOfFp32Groups = "local_sub_partitions_of_fp32_groups";
constexpr std::string_view kGroupPaddings = "group_paddings";
constexpr std::string_view kParamSliceMappings = "param_slice_mappings";
constexpr std::string_view kZeroStageEnum = "ZeroStageEnum";
constexpr std::string_view kCheckpointParallelDims = "checkpoint_parallel_dimensions";  // v0.19.5
constexpr std::string_view kPpDegree = "pp_degree";
constexpr std::string_view kTpDegree = "tp_degree";
constexpr std::string_view kAutoEpLayers = "ds_autoep_layers";  // v0.19
constexpr std::string_view kNumExperts = "num_experts";
// The fp32 masters of the ZeRO-0 wrappers' state_dict() (runtime/fp16/
// fused_optimizer.py, unfused_optimizer.py, runtime/bf16_optimizer.py).
constexpr std::string_view kFp32GroupsFlat = "fp32_groups_flat";
constexpr std::string_view kFp32Groups = "fp32_groups";

// ZeroStageEnum members (deepspeed/runtime/zero/config.py).
std::optional<int64_t> ZeroStageMember(std::string_view name) {
  if (name == "disabled") return 0;
  if (name == "optimizer_states") return 1;
  if (name == "gradients") return 2;
  if (name == "weights" || name == "max_stage") return 3;
  return std::nullopt;
}

std::string Sub(std::string_view where, std::string_view key) {
  std::string s(where);
  if (!s.empty()) s += '.';
  s += key;
  return s;
}

// Typed access to the graph of one file, with errors naming the file and
// the key path.
class Reader {
 public:
  Reader(const torch::Checkpoint& ckpt, std::string_view file) : ckpt_(ckpt), g_(ckpt.graph), file_(file) {
    for (size_t i = 0; i < ckpt.tensors.size(); ++i) tensors_.emplace(ckpt.tensors[i].node, i);
  }

  Status Error(std::string_view where, std::string why) const {
    Status s = Status::Corrupt(std::move(why));
    s.WithPath(file_);
    if (!where.empty()) s.WithRecord(where);
    return s;
  }

  bool IsNone(NodeId n) const { return n == kNoNode || g_.kind(n) == Kind::kNone; }

  // A dict's or OrderedDict's entries, flattened key, value.
  std::optional<std::span<const NodeId>> DictItems(NodeId n) const {
    if (n == kNoNode) return std::nullopt;
    if (g_.kind(n) == Kind::kDict) return g_.Items(n);
    if (g_.kind(n) == Kind::kObject && g_.IsGlobal(g_.Object(n).callable, "collections", "OrderedDict")) {
      return std::span<const NodeId>(g_.Object(n).dict_items);
    }
    return std::nullopt;
  }

  Result<std::span<const NodeId>> Dict(NodeId n, std::string_view where) const {
    std::optional<std::span<const NodeId>> items = DictItems(n);
    if (!items) return Error(where, "expected a dict, found " + KindName(n));
    ZF_TRY(ReadOnce(n, where));
    return *items;
  }

  // The value under str key `key` (the last one, as Python keeps), or kNoNode.
  NodeId Get(std::span<const NodeId> items, std::string_view key) const {
    NodeId found = kNoNode;
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      if (g_.kind(items[i]) == Kind::kStr && g_.AsStr(items[i]) == key) found = items[i + 1];
    }
    return found;
  }

  Result<NodeId> Require(std::span<const NodeId> items, std::string_view key, std::string_view where) const {
    NodeId n = Get(items, key);
    if (n == kNoNode) return Error(where, "no '" + std::string(key) + "' key: not a DeepSpeed ZeRO checkpoint file");
    return n;
  }

  Result<std::string> Str(NodeId n, std::string_view where) const {
    if (g_.kind(n) != Kind::kStr) return Error(where, "expected a str, found " + KindName(n));
    return std::string(g_.AsStr(n));
  }

  Result<int64_t> Int(NodeId n, std::string_view where) const {
    if (g_.kind(n) != Kind::kInt) return Error(where, "expected an int, found " + KindName(n));
    return g_.AsInt(n);
  }

  Result<std::span<const NodeId>> Seq(NodeId n, std::string_view where) const {
    if (g_.kind(n) != Kind::kList && g_.kind(n) != Kind::kTuple) {
      return Error(where, "expected a list, found " + KindName(n));
    }
    ZF_TRY(ReadOnce(n, where));
    return g_.Items(n);
  }

  Result<std::vector<int64_t>> Ints(NodeId n, std::string_view where) const {
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> items, Seq(n, where));
    std::vector<int64_t> out;
    for (size_t i = 0; i < items.size(); ++i) {
      ZF_ASSIGN_OR_RETURN(int64_t v, Int(items[i], Sub(where, std::to_string(i))));
      out.push_back(v);
    }
    return out;
  }

  // torch.Size((d0, d1, ...)), or a plain tuple or list of ints.
  Result<std::vector<int64_t>> Shape(NodeId n, std::string_view where) const {
    if (g_.kind(n) == Kind::kObject && g_.IsGlobal(g_.Object(n).callable, "torch", "Size")) {
      NodeId args = g_.Object(n).args;
      if (args == kNoNode || g_.kind(args) != Kind::kTuple || g_.Items(args).size() != 1) {
        return Error(where, "torch.Size without its one argument");
      }
      return Ints(g_.Items(args)[0], where);
    }
    return Ints(n, where);
  }

  Result<TensorMeta> Tensor(NodeId n, std::string_view where) const {
    auto it = tensors_.find(n);
    if (it == tensors_.end()) return Error(where, "expected a tensor, found " + KindName(n));
    const torch::Tensor& t = ckpt_.tensors[it->second];
    return TensorMeta{t.dtype, t.shape, t.stride, ckpt_.storages[t.storage].key, t.storage_offset};
  }

  bool IsTensor(NodeId n) const { return tensors_.count(n) != 0; }

  // An OrderedDict name -> value, each value read by `read`.
  template <typename T, typename Read>
  Result<std::vector<T>> Named(NodeId n, std::string_view where, Read read) const {
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> items, Dict(n, where));
    std::vector<T> out;
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      ZF_ASSIGN_OR_RETURN(std::string name, Str(items[i], Sub(where, std::to_string(i / 2))));
      ZF_ASSIGN_OR_RETURN(auto value, read(items[i + 1], Sub(where, name)));
      out.push_back(T{std::move(name), std::move(value)});
    }
    return out;
  }

  std::string KindName(NodeId n) const {
    if (n == kNoNode) return "nothing";
    switch (g_.kind(n)) {
      case Kind::kNone: return "None";
      case Kind::kBool: return "a bool";
      case Kind::kInt: case Kind::kBigInt: return "an int";
      case Kind::kFloat: return "a float";
      case Kind::kStr: return "a str";
      case Kind::kBytes: case Kind::kByteArray: return "bytes";
      case Kind::kTuple: return "a tuple";
      case Kind::kList: return "a list";
      case Kind::kDict: return "a dict";
      case Kind::kSet: case Kind::kFrozenSet: return "a set";
      case Kind::kGlobal: return "the global " + std::string(g_.GlobalModule(n)) + "." + std::string(g_.GlobalName(n));
      case Kind::kObject: {
        NodeId c = g_.Object(n).callable;
        if (c != kNoNode && g_.kind(c) == Kind::kGlobal) {
          return "a " + std::string(g_.GlobalModule(c)) + "." + std::string(g_.GlobalName(c)) + " object";
        }
        return "an object";
      }
      case Kind::kPersId: return "a persistent id";
    }
    return "something else";
  }

  const pickle::Graph& graph() const { return g_; }

 private:
  // Each container is read at most once. DeepSpeed never shares one between
  // keys; a pickle that does (a list of one dict 3000 times, each of 3000
  // entries) would make the description grow with the product of sizes
  // while the file grows with their sum.
  Status ReadOnce(NodeId n, std::string_view where) const {
    if (!read_.insert(n).second) {
      return Error(where, KindName(n) + " that was read before, at another key (a shared container)");
    }
    return Status::OK();
  }

  const torch::Checkpoint& ckpt_;
  const pickle::Graph& g_;
  std::string file_;
  std::unordered_map<NodeId, size_t> tensors_;  // node -> first Tensor reaching it
  mutable std::unordered_set<NodeId> read_;     // containers read (ReadOnce)
};

Result<std::vector<NamedShape>> NamedShapes(const Reader& r, NodeId n, std::string_view where) {
  return r.Named<NamedShape>(n, where, [&r](NodeId v, std::string_view w) { return r.Shape(v, w); });
}

Result<std::vector<NamedTensor>> NamedTensors(const Reader& r, NodeId n, std::string_view where) {
  return r.Named<NamedTensor>(n, where, [&r](NodeId v, std::string_view w) { return r.Tensor(v, w); });
}

// zero_stage: an int, ZeroStageEnum(n), getattr(ZeroStageEnum, 'member'), or
// a global naming the member.
Result<int64_t> ZeroStage(const Reader& r, NodeId n, std::string_view where) {
  const pickle::Graph& g = r.graph();
  if (g.kind(n) == Kind::kInt) return g.AsInt(n);
  if (g.kind(n) == Kind::kGlobal) {
    std::string_view name = g.GlobalName(n);
    if (name.substr(0, kZeroStageEnum.size() + 1) == std::string(kZeroStageEnum) + ".") {
      if (std::optional<int64_t> v = ZeroStageMember(name.substr(kZeroStageEnum.size() + 1))) return *v;
    }
  }
  if (g.kind(n) == Kind::kObject) {
    const pickle::ObjectData& o = g.Object(n);
    NodeId c = o.callable;
    std::span<const NodeId> args;
    if (o.args != kNoNode && g.kind(o.args) == Kind::kTuple) args = g.Items(o.args);
    bool is_enum = c != kNoNode && g.kind(c) == Kind::kGlobal && g.GlobalName(c) == kZeroStageEnum;
    if (is_enum && args.size() == 1 && g.kind(args[0]) == Kind::kInt) return g.AsInt(args[0]);
    bool is_getattr = g.IsGlobal(c, "builtins", "getattr") || g.IsGlobal(c, "__builtin__", "getattr");
    if (is_getattr && args.size() == 2 && g.kind(args[0]) == Kind::kGlobal &&
        g.GlobalName(args[0]) == kZeroStageEnum && g.kind(args[1]) == Kind::kStr) {
      if (std::optional<int64_t> v = ZeroStageMember(g.AsStr(args[1]))) return *v;
    }
  }
  return r.Error(where, "zero_stage is " + r.KindName(n) + ", not a ZeroStageEnum member or an int");
}

// fragment_address(numel, start): a dataclass, its fields in the BUILD
// state dict (or the slots half of a (dict, slots) state).
Result<SliceMapping> FragmentAddress(const Reader& r, std::string name, NodeId n, std::string_view where) {
  const pickle::Graph& g = r.graph();
  NodeId state = kNoNode;
  if (g.kind(n) == Kind::kObject) state = g.Object(n).state;
  if (state != kNoNode && g.kind(state) == Kind::kTuple && g.Items(state).size() == 2) {
    state = r.IsNone(g.Items(state)[0]) ? g.Items(state)[1] : g.Items(state)[0];
  }
  std::optional<std::span<const NodeId>> items = r.DictItems(state);
  if (!items) return r.Error(where, "expected a fragment_address, found " + r.KindName(n));
  NodeId start = r.Get(*items, "start");
  NodeId numel = r.Get(*items, "numel");
  if (start == kNoNode || numel == kNoNode) return r.Error(where, "fragment_address without start and numel");
  ZF_ASSIGN_OR_RETURN(int64_t s, r.Int(start, Sub(where, "start")));
  ZF_ASSIGN_OR_RETURN(int64_t c, r.Int(numel, Sub(where, "numel")));
  return SliceMapping{std::move(name), s, c};
}

// The model states' `optimizer` (ZeRO-0): which wrapper wrote it and its
// fp32 masters, per group.
Status Zero0Masters(const Reader& r, NodeId n, ModelStates* m) {
  std::optional<std::span<const NodeId>> items = r.DictItems(n);
  if (!items) {
    m->optimizer_kind = Zero0Optimizer::kTorch;  // some other object: no masters we know
    return Status::OK();
  }
  const std::string where(kOptimizer);
  auto flat_groups = [&](std::string_view key, NodeId groups) -> Status {
    std::string w = Sub(where, key);
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> list, r.Seq(groups, w));
    for (size_t g = 0; g < list.size(); ++g) {
      ZF_ASSIGN_OR_RETURN(TensorMeta t, r.Tensor(list[g], Sub(w, std::to_string(g))));
      m->optimizer_fp32_groups.push_back({std::move(t)});
    }
    return Status::OK();
  };
  if (NodeId g = r.Get(*items, kFp32GroupsFlat); g != kNoNode) {
    m->optimizer_kind = Zero0Optimizer::kFp16Fused;
    return flat_groups(kFp32GroupsFlat, g);
  }
  if (NodeId g = r.Get(*items, kSinglePartitionOfFp32Groups); g != kNoNode) {
    m->optimizer_kind = Zero0Optimizer::kBf16;
    return flat_groups(kSinglePartitionOfFp32Groups, g);
  }
  if (NodeId g = r.Get(*items, kFp32Groups); g != kNoNode) {
    m->optimizer_kind = Zero0Optimizer::kFp16Unfused;
    std::string w = Sub(where, kFp32Groups);
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> groups, r.Seq(g, w));
    for (size_t i = 0; i < groups.size(); ++i) {
      std::string gw = Sub(w, std::to_string(i));
      ZF_ASSIGN_OR_RETURN(std::span<const NodeId> params, r.Seq(groups[i], gw));
      std::vector<TensorMeta> group;
      for (size_t j = 0; j < params.size(); ++j) {
        ZF_ASSIGN_OR_RETURN(TensorMeta t, r.Tensor(params[j], Sub(gw, std::to_string(j))));
        group.push_back(std::move(t));
      }
      m->optimizer_fp32_groups.push_back(std::move(group));
    }
    return Status::OK();
  }
  m->optimizer_kind = Zero0Optimizer::kTorch;
  return Status::OK();
}

}  // namespace

std::string_view Zero0OptimizerName(Zero0Optimizer kind) {
  switch (kind) {
    case Zero0Optimizer::kNone: return "none";
    case Zero0Optimizer::kFp16Fused: return "FP16_Optimizer";
    case Zero0Optimizer::kFp16Unfused: return "FP16_UnfusedOptimizer";
    case Zero0Optimizer::kBf16: return "BF16_Optimizer";
    case Zero0Optimizer::kTorch: return "torch optimizer";
  }
  return "?";
}

Result<ModelStates> ExtractModelStates(const torch::Checkpoint& ckpt, std::string_view file) {
  Reader r(ckpt, file);
  ModelStates m;
  m.file = std::string(file);
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> root, r.Dict(ckpt.root, ""));

  ZF_ASSIGN_OR_RETURN(NodeId module, r.Require(root, kModule, ""));
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> entries, r.Dict(module, kModule));
  for (size_t i = 0; i + 1 < entries.size(); i += 2) {
    ZF_ASSIGN_OR_RETURN(std::string name, r.Str(entries[i], Sub(kModule, std::to_string(i / 2))));
    if (!r.IsTensor(entries[i + 1])) continue;  // extra state: not a tensor, not merged
    ZF_ASSIGN_OR_RETURN(TensorMeta t, r.Tensor(entries[i + 1], Sub(kModule, name)));
    m.module.push_back(NamedTensor{std::move(name), std::move(t)});
  }

  ZF_ASSIGN_OR_RETURN(NodeId buffers, r.Require(root, kBufferNames, ""));
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> names, r.Seq(buffers, kBufferNames));
  for (size_t i = 0; i < names.size(); ++i) {
    ZF_ASSIGN_OR_RETURN(std::string name, r.Str(names[i], Sub(kBufferNames, std::to_string(i))));
    m.buffer_names.push_back(std::move(name));
  }

  ZF_ASSIGN_OR_RETURN(NodeId shapes, r.Require(root, kParamShapes, ""));
  if (r.IsNone(shapes)) {
    m.param_shapes_recorded = false;  // ZeRO-0
  } else if (r.DictItems(shapes)) {  // one group, not in a list
    ZF_ASSIGN_OR_RETURN(std::vector<NamedShape> group, NamedShapes(r, shapes, kParamShapes));
    m.param_shapes.push_back(std::move(group));
  } else {
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> groups, r.Seq(shapes, kParamShapes));
    for (size_t g = 0; g < groups.size(); ++g) {
      ZF_ASSIGN_OR_RETURN(std::vector<NamedShape> group, NamedShapes(r, groups[g], Sub(kParamShapes, std::to_string(g))));
      m.param_shapes.push_back(std::move(group));
    }
  }

  if (NodeId n = r.Get(root, kFrozenParamShapes); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(m.frozen_param_shapes, NamedShapes(r, n, kFrozenParamShapes));
  }
  if (NodeId n = r.Get(root, kFrozenParamFragments); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(m.frozen_param_fragments, NamedTensors(r, n, kFrozenParamFragments));
  }
  if (NodeId n = r.Get(root, kSharedParams); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(
        m.shared_params,
        r.Named<SharedParam>(n, kSharedParams, [&r](NodeId v, std::string_view w) { return r.Str(v, w); }));
  }
  if (NodeId n = r.Get(root, kOptimizer); !r.IsNone(n)) {
    m.has_optimizer = true;
    ZF_TRY(Zero0Masters(r, n, &m));
  }
  if (NodeId n = r.Get(root, kDpWorldSize); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(m.dp_world_size, r.Int(n, kDpWorldSize));
  }
  if (NodeId n = r.Get(root, kCheckpointParallelDims); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> dims, r.Dict(n, kCheckpointParallelDims));
    if (NodeId v = r.Get(dims, kPpDegree); !r.IsNone(v)) {
      ZF_ASSIGN_OR_RETURN(m.pp_degree, r.Int(v, Sub(kCheckpointParallelDims, kPpDegree)));
    }
    if (NodeId v = r.Get(dims, kTpDegree); !r.IsNone(v)) {
      ZF_ASSIGN_OR_RETURN(m.tp_degree, r.Int(v, Sub(kCheckpointParallelDims, kTpDegree)));
    }
  }
  m.has_autoep_layers = !r.IsNone(r.Get(root, kAutoEpLayers));
  if (NodeId n = r.Get(root, kNumExperts); !r.IsNone(n)) {
    if (r.graph().kind(n) == Kind::kInt) {
      m.num_experts = std::vector<int64_t>{r.graph().AsInt(n)};
    } else {
      ZF_ASSIGN_OR_RETURN(m.num_experts, r.Ints(n, kNumExperts));
    }
  }
  if (NodeId n = r.Get(root, kDsVersion); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(m.ds_version, r.Str(n, kDsVersion));
  }
  return m;
}

Result<OptimStates> ExtractOptimStates(const torch::Checkpoint& ckpt, std::string_view file, uint32_t rank) {
  Reader r(ckpt, file);
  OptimStates o;
  o.file = std::string(file);
  o.rank = rank;
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> root, r.Dict(ckpt.root, ""));
  ZF_ASSIGN_OR_RETURN(NodeId osd_node, r.Require(root, kOptimizerStateDict, ""));
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> osd, r.Dict(osd_node, kOptimizerStateDict));
  const std::string where(kOptimizerStateDict);

  if (NodeId n = r.Get(osd, kZeroStage); n != kNoNode) {
    ZF_ASSIGN_OR_RETURN(o.zero_stage, ZeroStage(r, n, Sub(where, kZeroStage)));
  }

  ZF_ASSIGN_OR_RETURN(NodeId pc, r.Require(osd, kPartitionCount, where));
  if (r.graph().kind(pc) == Kind::kInt) {
    o.partition_count = {r.graph().AsInt(pc)};
  } else {
    ZF_ASSIGN_OR_RETURN(o.partition_count, r.Ints(pc, Sub(where, kPartitionCount)));
    o.partition_count_is_list = true;
  }

  NodeId groups = r.Get(osd, kSinglePartitionOfFp32Groups);
  std::string_view key = kSinglePartitionOfFp32Groups;
  if (groups == kNoNode) {
    groups = r.Get(osd, kFp32FlatGroups);
    key = kFp32FlatGroups;
    o.fp32_groups_key = Fp32GroupsKey::kFp32FlatGroups;
  }
  if (groups == kNoNode && r.Get(osd, kLocalSubPartitionsOfFp32Groups) != kNoNode) {
    Status s = Status::Unsupported(
        "DeepSpeed's old ZeRO-1 layout (local_sub_partitions_of_fp32_groups) is not supported");
    return s.WithPath(file).WithRecord(Sub(where, kLocalSubPartitionsOfFp32Groups));
  }
  if (groups == kNoNode) {
    return r.Error(where, "neither single_partition_of_fp32_groups nor fp32_flat_groups: no fp32 weights");
  }
  ZF_ASSIGN_OR_RETURN(std::span<const NodeId> items, r.Seq(groups, Sub(where, key)));
  for (size_t g = 0; g < items.size(); ++g) {
    ZF_ASSIGN_OR_RETURN(TensorMeta t, r.Tensor(items[g], Sub(Sub(where, key), std::to_string(g))));
    o.fp32_groups.push_back(std::move(t));
  }

  if (NodeId n = r.Get(osd, kGroupPaddings); !r.IsNone(n)) {
    ZF_ASSIGN_OR_RETURN(o.group_paddings, r.Ints(n, Sub(where, kGroupPaddings)));
  }
  if (NodeId n = r.Get(osd, kParamSliceMappings); !r.IsNone(n)) {
    std::string mw = Sub(where, kParamSliceMappings);
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> per_group, r.Seq(n, mw));
    std::vector<std::vector<SliceMapping>> mappings;
    for (size_t g = 0; g < per_group.size(); ++g) {
      std::string gw = Sub(mw, std::to_string(g));
      ZF_ASSIGN_OR_RETURN(std::span<const NodeId> entries, r.Dict(per_group[g], gw));
      std::vector<SliceMapping> group;
      for (size_t i = 0; i + 1 < entries.size(); i += 2) {
        ZF_ASSIGN_OR_RETURN(std::string name, r.Str(entries[i], Sub(gw, std::to_string(i / 2))));
        std::string ew = Sub(gw, name);
        ZF_ASSIGN_OR_RETURN(SliceMapping m, FragmentAddress(r, std::move(name), entries[i + 1], ew));
        group.push_back(std::move(m));
      }
      mappings.push_back(std::move(group));
    }
    o.param_slice_mappings = std::move(mappings);
  }
  return o;
}

}  // namespace zerofold::zero

namespace zerofold::zero {

Result<UniversalParam> ExtractUniversalParam(const torch::Checkpoint& ckpt, std::string_view file, std::string name,
                                             uint32_t index) {
  Reader r(ckpt, file);
  UniversalParam u;
  u.name = std::move(name);
  u.file = index;
  if (r.IsTensor(ckpt.root)) {
    ZF_ASSIGN_OR_RETURN(u.tensor, r.Tensor(ckpt.root, ""));
    return u;
  }
  std::optional<std::span<const NodeId>> items = r.DictItems(ckpt.root);
  if (!items) return r.Error("", "expected a tensor or a dict with 'param', found " + r.KindName(ckpt.root));
  ZF_ASSIGN_OR_RETURN(NodeId param, r.Require(*items, "param", ""));
  ZF_ASSIGN_OR_RETURN(u.tensor, r.Tensor(param, "param"));
  for (std::string_view key : {"cat_dim", "vocab_tensor", "sub_param_shape"}) {
    if (r.Get(*items, key) != kNoNode) u.has_tp_keys = true;
  }
  return u;
}

}  // namespace zerofold::zero
