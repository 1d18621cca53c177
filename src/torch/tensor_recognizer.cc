#include "torch/tensor_recognizer.h"

#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "io/checked_math.h"
#include "torch/format.h"

namespace zerofold::torch {
namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::kNoNode;
using pickle::NodeId;
using pickle::ObjectOp;

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kBigInt: return "int beyond 64 bits";
    case Kind::kFloat: return "float";
    case Kind::kStr: return "str";
    case Kind::kBytes: return "bytes";
    case Kind::kByteArray: return "bytearray";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kSet: return "set";
    case Kind::kFrozenSet: return "frozenset";
    case Kind::kGlobal: return "global";
    case Kind::kObject: return "object";
    case Kind::kPersId: return "persistent id";
  }
  return "unknown";
}

bool IsTorchModule(std::string_view module) {
  return module == kTorchModule || (module.size() > kTorchModule.size() && module.starts_with(kTorchModule) &&
                                    module[kTorchModule.size()] == '.');
}

// str, or bytes as Python 2 pickles (and encoding='bytes') leave them.
std::optional<std::string_view> Text(const Graph& g, NodeId n) {
  if (g.kind(n) == Kind::kStr || g.kind(n) == Kind::kBytes) return g.AsStr(n);
  return std::nullopt;
}

std::string GlobalText(const Graph& g, NodeId n) {
  return std::string(g.GlobalModule(n)) + "." + std::string(g.GlobalName(n));
}

// --- Python reprs of dict keys that are not str or int ---

std::string FloatRepr(double v) {
  if (v != v) return "nan";
  if (v == __builtin_inf()) return "inf";
  if (v == -__builtin_inf()) return "-inf";
  char buf[64];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// Decimal of a little-endian two's complement integer (LONG1/LONG4 payload).
std::string BigIntRepr(std::string_view le) {
  constexpr size_t kMaxBytes = 64;  // a dict key, not arithmetic: longer ones are summarized
  if (le.size() > kMaxBytes) return "<int of " + std::to_string(le.size()) + " bytes>";
  std::vector<uint8_t> mag(le.begin(), le.end());
  bool negative = !mag.empty() && (mag.back() & 0x80);
  if (negative) {  // magnitude = two's complement negation
    unsigned carry = 1;
    for (uint8_t& b : mag) {
      unsigned v = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
  }
  std::string digits;
  while (true) {
    bool zero = true;
    unsigned rem = 0;
    for (size_t i = mag.size(); i-- > 0;) {  // divide by 10, most significant byte first
      unsigned cur = (rem << 8) | mag[i];
      mag[i] = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
      if (mag[i]) zero = false;
    }
    digits.push_back(static_cast<char>('0' + rem));
    if (zero) break;
  }
  if (negative) digits.push_back('-');
  return std::string(digits.rbegin(), digits.rend());
}

std::string BytesRepr(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "b'";
  for (unsigned char c : bytes) {
    if (c == '\\' || c == '\'') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      s += "\\x";
      s += kHex[c >> 4];
      s += kHex[c & 15];
    }
  }
  return s + "'";
}

std::string KeyRepr(const Graph& g, NodeId n, int depth) {
  constexpr int kMaxReprDepth = 8;
  switch (g.kind(n)) {
    case Kind::kStr: return std::string(g.AsStr(n));
    case Kind::kInt: return std::to_string(g.AsInt(n));
    case Kind::kBigInt: return BigIntRepr(g.AsStr(n));
    case Kind::kBool: return g.AsBool(n) ? "True" : "False";
    case Kind::kNone: return "None";
    case Kind::kFloat: return FloatRepr(g.AsFloat(n));
    case Kind::kBytes: return BytesRepr(g.AsStr(n));
    case Kind::kGlobal: return GlobalText(g, n);
    case Kind::kTuple: {
      if (depth >= kMaxReprDepth) return "(...)";
      std::span<const NodeId> items = g.Items(n);
      std::string s = "(";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) s += ", ";
        std::string item = KeyRepr(g, items[i], depth + 1);
        s += g.kind(items[i]) == Kind::kStr ? "'" + item + "'" : item;
      }
      if (items.size() == 1) s += ",";
      return s + ")";
    }
    default: return "<" + std::string(KindName(g.kind(n))) + ">";
  }
}

PathElem KeyElem(const Graph& g, NodeId key) {
  if (g.kind(key) == Kind::kInt) return {PathElem::Type::kIntKey, {}, g.AsInt(key)};
  return {PathElem::Type::kStrKey, KeyRepr(g, key, 0), 0};
}

// --- Rebuild calls ---

enum class Rebuild { kNone, kTensor, kTensorV2, kTensorV3, kQTensor, kParameter, kParameterWithState, kFromTypeV2 };

Rebuild RebuildOf(const Graph& g, NodeId callable) {
  if (callable == kNoNode || g.kind(callable) != Kind::kGlobal) return Rebuild::kNone;
  std::string_view module = g.GlobalModule(callable);
  std::string_view name = g.GlobalName(callable);
  if (module == kUtilsModule) {
    if (name == kRebuildTensor) return Rebuild::kTensor;
    if (name == kRebuildTensorV2) return Rebuild::kTensorV2;
    if (name == kRebuildTensorV3) return Rebuild::kTensorV3;
    if (name == kRebuildQTensor) return Rebuild::kQTensor;
    if (name == kRebuildParameter) return Rebuild::kParameter;
    if (name == kRebuildParameterWithState) return Rebuild::kParameterWithState;
  }
  if ((module == kTensorModule || module == kTensorModuleOld) && name == kRebuildFromTypeV2)
    return Rebuild::kFromTypeV2;
  return Rebuild::kNone;
}

// A child edge of the traversal. Dict keys are turned into path elements
// only when a path is actually built.
struct Child {
  enum class Step : uint8_t { kIndex, kKey, kAttr } step;
  std::string_view attr;  // kAttr: a literal
  int64_t index = 0;      // kIndex
  NodeId key = kNoNode;   // kKey
  NodeId node = kNoNode;
};

constexpr std::string_view kArgsAttr = "args";
constexpr std::string_view kKwargsAttr = "kwargs";
constexpr std::string_view kStateAttr = "state";

// A recognized tensor view.
struct View {
  NodeId rebuild = kNoNode;
  NodeId args = kNoNode;
  NodeId pid = kNoNode;
  uint32_t storage = 0;
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t storage_offset = 0;
  bool requires_grad = false;
  bool is_parameter = false;
  bool quantized = false;
  std::vector<Child> extras;  // parts that may hold more tensors
};

class Recognizer {
 public:
  Recognizer(const Graph& g, const RecognizeOptions& options) : g_(g), options_(options) {}

  Result<Recognized> Run(NodeId root);

 private:
  Status ScanPids();
  Status RegisterStorage(NodeId pid_node, const StoragePid& pid);
  void ClassifyAll();
  Result<std::optional<View>> ClassifyObject(NodeId node, int depth);
  Result<std::optional<View>> ClassifyCall(Rebuild kind, NodeId call, NodeId args, int depth);
  Result<int64_t> IntArg(NodeId n, std::string_view what);
  Result<bool> BoolArg(NodeId n, std::string_view what);
  Result<std::vector<int64_t>> IntsArg(NodeId n, std::string_view what);
  void Children(NodeId n, std::vector<Child>& out) const;
  void ChildrenUnchecked(NodeId n, std::vector<Child>& out) const;
  void MarkHolders();
  PathElem Elem(const Child& c) const;
  Status Walk(NodeId root);
  void Emit(NodeId node, const View& view);

  const Graph& g_;
  RecognizeOptions options_;
  Recognized out_;
  std::unordered_map<std::string, uint32_t> storage_by_key_;
  std::unordered_map<NodeId, uint32_t> storage_by_pid_;  // kPersId node -> storage
  std::vector<bool> typed_by_first_tensor_;               // untyped storage got its dtype from a tensor
  std::unordered_map<NodeId, View> views_;                // recognized tensor nodes
  std::unordered_map<NodeId, Status> malformed_;          // rebuild calls torch would fail on
  std::vector<bool> holder_;                              // a tensor is reachable from the node
  std::vector<PathElem> path_;
};

Status Recognizer::ScanPids() {
  for (NodeId n = 0; n < g_.size(); ++n) {
    if (g_.kind(n) != Kind::kPersId) continue;
    ZF_ASSIGN_OR_RETURN(std::optional<StoragePid> pid, ParseStoragePid(g_, n, options_.format));
    if (pid) ZF_TRY(RegisterStorage(n, *pid));
  }
  return Status::OK();
}

std::string Describe(const StoragePid& pid) {
  std::string cls = pid.untyped ? "UntypedStorage" : std::string(Info(*pid.dtype).storage_class);
  return cls + " of " + std::to_string(pid.numel) + (pid.untyped ? " bytes" : " elements");
}

Status Recognizer::RegisterStorage(NodeId pid_node, const StoragePid& pid) {
  auto [it, inserted] = storage_by_key_.emplace(pid.key, static_cast<uint32_t>(out_.storages.size()));
  if (inserted) {
    Storage s;
    s.key = pid.key;
    s.dtype = pid.dtype.value_or(DType::kUInt8);
    s.untyped = pid.untyped;
    s.nbytes = pid.nbytes;
    s.location = pid.location;
    s.pid_node = pid_node;
    out_.storages.push_back(std::move(s));
    typed_by_first_tensor_.push_back(false);
  } else {
    const Storage& first = out_.storages[it->second];
    // Typed declarations must agree in class and size. An untyped one
    // carries no element type, so only its byte size must agree.
    bool consistent = first.nbytes == pid.nbytes &&
                      (first.untyped || pid.untyped || first.dtype == *pid.dtype);
    if (!consistent) {
      StoragePid was;
      was.untyped = first.untyped;
      was.dtype = first.dtype;
      was.numel = first.untyped ? first.nbytes : first.nbytes / Info(first.dtype).itemsize;
      return Status::Corrupt("storage '" + pid.key + "' is declared as " + Describe(was) + " and as " +
                             Describe(pid));
    }
  }
  storage_by_pid_[pid_node] = it->second;
  return Status::OK();
}

Result<int64_t> Recognizer::IntArg(NodeId n, std::string_view what) {
  if (g_.kind(n) == Kind::kInt) return g_.AsInt(n);
  if (g_.kind(n) == Kind::kBigInt) return Status::Corrupt(std::string(what) + " does not fit in 64 bits");
  return Status::Corrupt(std::string(what) + " is a " + std::string(KindName(g_.kind(n))) + ", not an int");
}

Result<bool> Recognizer::BoolArg(NodeId n, std::string_view what) {
  if (g_.kind(n) == Kind::kBool) return g_.AsBool(n);
  if (g_.kind(n) == Kind::kInt) return g_.AsInt(n) != 0;  // protocol 0/1 writes bools as ints
  return Status::Corrupt(std::string(what) + " is a " + std::string(KindName(g_.kind(n))) + ", not a bool");
}

// A tuple/list of ints, or torch.Size(tuple).
Result<std::vector<int64_t>> Recognizer::IntsArg(NodeId n, std::string_view what) {
  if (g_.kind(n) == Kind::kObject) {
    const pickle::ObjectData& obj = g_.Object(n);
    if (g_.IsGlobal(obj.callable, kTorchModule, kSizeClass) && obj.args != kNoNode &&
        g_.kind(obj.args) == Kind::kTuple && g_.Items(obj.args).size() == 1)
      n = g_.Items(obj.args)[0];
  }
  if (g_.kind(n) != Kind::kTuple && g_.kind(n) != Kind::kList)
    return Status::Corrupt(std::string(what) + " is a " + std::string(KindName(g_.kind(n))) + ", not a tuple");
  std::vector<int64_t> out;
  std::span<const NodeId> items = g_.Items(n);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ZF_ASSIGN_OR_RETURN(int64_t v, IntArg(items[i], std::string(what) + "[" + std::to_string(i) + "]"));
    out.push_back(v);
  }
  return out;
}

Result<std::optional<View>> Recognizer::ClassifyObject(NodeId node, int depth) {
  const pickle::ObjectData& obj = g_.Object(node);
  if (obj.op != ObjectOp::kReduce) return std::optional<View>();
  Rebuild kind = RebuildOf(g_, obj.callable);
  if (kind == Rebuild::kNone) return std::optional<View>();
  return ClassifyCall(kind, node, obj.args, depth);
}

Result<std::optional<View>> Recognizer::ClassifyCall(Rebuild kind, NodeId call, NodeId args, int depth) {
  // Nesting is Parameter -> from_type_v2 -> tensor at most.
  constexpr int kMaxNesting = 3;
  if (depth >= kMaxNesting) return std::optional<View>();
  if (args == kNoNode || g_.kind(args) != Kind::kTuple)
    return Status::Corrupt("rebuild call arguments are a " +
                           std::string(args == kNoNode ? "missing value" : KindName(g_.kind(args))) +
                           ", not a tuple");
  std::span<const NodeId> a = g_.Items(args);
  // Checks a.size() is `n`, or `n` or `n + 1` when a trailing metadata
  // argument is allowed.
  auto count_ok = [&](std::string_view fn, size_t n, bool metadata) -> Status {
    if (a.size() == n || (metadata && a.size() == n + 1)) return Status::OK();
    return Status::Corrupt(std::string(fn) + " takes " + std::to_string(n) +
                           (metadata ? " or " + std::to_string(n + 1) : std::string()) + " arguments, got " +
                           std::to_string(a.size()));
  };
  switch (kind) {
    case Rebuild::kNone: return std::optional<View>();
    case Rebuild::kTensor:
    case Rebuild::kTensorV2:
    case Rebuild::kTensorV3:
    case Rebuild::kQTensor: {
      // A view needs a storage pid first; anything else (e.g. a storage
      // pickled by value) stays symbolic.
      if (a.empty() || g_.kind(a[kArgStorage]) != Kind::kPersId) return std::optional<View>();
      auto storage = storage_by_pid_.find(a[kArgStorage]);
      if (storage == storage_by_pid_.end()) return std::optional<View>();  // a module pid
      if (kind == Rebuild::kTensor) ZF_TRY(count_ok(kRebuildTensor, kRebuildTensorArgs, false));
      if (kind == Rebuild::kTensorV2) ZF_TRY(count_ok(kRebuildTensorV2, kRebuildTensorV2Args, true));
      if (kind == Rebuild::kTensorV3) ZF_TRY(count_ok(kRebuildTensorV3, kRebuildTensorV3Args, true));
      if (kind == Rebuild::kQTensor) ZF_TRY(count_ok(kRebuildQTensor, kRebuildQTensorArgs, false));
      View v;
      v.rebuild = call;
      v.args = args;
      v.pid = a[kArgStorage];
      v.storage = storage->second;
      const Storage& s = out_.storages[v.storage];
      v.dtype = s.untyped ? DType::kUInt8 : s.dtype;
      ZF_ASSIGN_OR_RETURN(v.storage_offset, IntArg(a[kArgStorageOffset], "storage_offset"));
      ZF_ASSIGN_OR_RETURN(v.shape, IntsArg(a[kArgSize], "size"));
      ZF_ASSIGN_OR_RETURN(v.stride, IntsArg(a[kArgStride], "stride"));
      if (kind == Rebuild::kTensorV2 || kind == Rebuild::kTensorV3) {
        ZF_ASSIGN_OR_RETURN(v.requires_grad, BoolArg(a[kArgRequiresGrad], "requires_grad"));
      }
      if (kind == Rebuild::kTensorV3) {
        NodeId d = a[kArgV3DType];
        std::optional<DType> dtype;
        if (g_.kind(d) == Kind::kGlobal && g_.GlobalModule(d) == kTorchModule) dtype = FromName(g_.GlobalName(d));
        if (!dtype)
          return Status::Corrupt("_rebuild_tensor_v3 dtype is " +
                                 (g_.kind(d) == Kind::kGlobal ? GlobalText(g_, d)
                                                              : "a " + std::string(KindName(g_.kind(d)))) +
                                 ", not a torch dtype");
        v.dtype = *dtype;
      }
      if (kind == Rebuild::kQTensor) {
        ZF_ASSIGN_OR_RETURN(v.requires_grad, BoolArg(a[kArgQRequiresGrad], "requires_grad"));
        v.quantized = true;
        // Per-channel quantizer parameters (args[kArgQuantizerParams]) hold
        // scale and zero-point tensors: they are named ".args.4.<i>".
        v.extras.push_back({Child::Step::kAttr, kArgsAttr, 0, kNoNode, args});
      }
      return std::optional<View>(std::move(v));
    }
    case Rebuild::kParameter:
    case Rebuild::kParameterWithState: {
      if (kind == Rebuild::kParameter) ZF_TRY(count_ok(kRebuildParameter, kRebuildParameterArgs, false));
      if (kind == Rebuild::kParameterWithState)
        ZF_TRY(count_ok(kRebuildParameterWithState, kRebuildParameterWithStateArgs, false));
      if (g_.kind(a[kArgParamData]) != Kind::kObject) return std::optional<View>();
      ZF_ASSIGN_OR_RETURN(std::optional<View> data, ClassifyObject(a[kArgParamData], depth + 1));
      if (!data || data->is_parameter) return std::optional<View>();
      ZF_ASSIGN_OR_RETURN(data->requires_grad, BoolArg(a[kArgParamRequiresGrad], "requires_grad"));
      data->is_parameter = true;
      if (kind == Rebuild::kParameterWithState)
        data->extras.push_back({Child::Step::kAttr, kStateAttr, 0, kNoNode, a[kArgParamState]});
      return data;
    }
    case Rebuild::kFromTypeV2: {
      // A tensor subclass rebuilt by func(*args), then given `state`.
      ZF_TRY(count_ok(kRebuildFromTypeV2, kRebuildFromTypeV2Args, false));
      Rebuild inner = RebuildOf(g_, a[kArgFromTypeFunc]);
      if (inner == Rebuild::kNone || inner == Rebuild::kFromTypeV2) return std::optional<View>();
      ZF_ASSIGN_OR_RETURN(std::optional<View> v, ClassifyCall(inner, call, a[kArgFromTypeArgs], depth + 1));
      if (!v) return v;
      if (inner != Rebuild::kParameter && inner != Rebuild::kParameterWithState) v->rebuild = call;
      v->extras.push_back({Child::Step::kAttr, kStateAttr, 0, kNoNode, a[kArgFromTypeState]});
      return v;
    }
  }
  return std::optional<View>();
}

void Recognizer::ClassifyAll() {
  for (NodeId n = 0; n < g_.size(); ++n) {
    if (g_.kind(n) != Kind::kObject) continue;
    Result<std::optional<View>> v = ClassifyObject(n, 0);
    if (!v.ok()) {
      malformed_.emplace(n, v.status());
    } else if (v.value()) {
      views_.emplace(n, std::move(*v.value()));
    }
  }
}

bool IsOrderedDict(const Graph& g, NodeId callable) {
  return g.IsGlobal(callable, kCollectionsModule, kOrderedDictClass);
}

void Recognizer::Children(NodeId n, std::vector<Child>& out) const {
  out.clear();
  ChildrenUnchecked(n, out);
  // A decoder never leaves dangling ids; drop them rather than index past the graph.
  std::erase_if(out, [&](const Child& c) { return c.node >= g_.size(); });
}

void Recognizer::ChildrenUnchecked(NodeId n, std::vector<Child>& out) const {
  switch (g_.kind(n)) {
    case Kind::kTuple:
    case Kind::kList:
    case Kind::kSet:
    case Kind::kFrozenSet: {
      std::span<const NodeId> items = g_.Items(n);
      for (size_t i = 0; i < items.size(); ++i)
        out.push_back({Child::Step::kIndex, {}, static_cast<int64_t>(i), kNoNode, items[i]});
      return;
    }
    case Kind::kDict: {
      std::span<const NodeId> e = g_.Items(n);
      for (size_t i = 0; i + 1 < e.size(); i += 2) out.push_back({Child::Step::kKey, {}, 0, e[i], e[i + 1]});
      return;
    }
    case Kind::kObject: break;
    default: return;
  }
  if (auto v = views_.find(n); v != views_.end()) {
    out.insert(out.end(), v->second.extras.begin(), v->second.extras.end());
    return;
  }
  const pickle::ObjectData& obj = g_.Object(n);
  bool ordered_dict = IsOrderedDict(g_, obj.callable);
  if (ordered_dict && obj.args != kNoNode && g_.kind(obj.args) == Kind::kTuple && g_.Items(obj.args).size() == 1) {
    // OrderedDict([[k, v], ...]) as protocols 0 and 1 write it: name by key.
    NodeId items = g_.Items(obj.args)[0];
    if (g_.kind(items) == Kind::kList) {
      for (NodeId pair : g_.Items(items)) {
        if ((g_.kind(pair) == Kind::kList || g_.kind(pair) == Kind::kTuple) && g_.Items(pair).size() == 2)
          out.push_back({Child::Step::kKey, {}, 0, g_.Items(pair)[0], g_.Items(pair)[1]});
      }
    }
  } else if (!ordered_dict && obj.args != kNoNode) {
    out.push_back({Child::Step::kAttr, kArgsAttr, 0, kNoNode, obj.args});
  }
  if (obj.kwargs != kNoNode) out.push_back({Child::Step::kAttr, kKwargsAttr, 0, kNoNode, obj.kwargs});
  for (size_t i = 0; i < obj.list_items.size(); ++i)
    out.push_back({Child::Step::kIndex, {}, static_cast<int64_t>(i), kNoNode, obj.list_items[i]});
  for (size_t i = 0; i + 1 < obj.dict_items.size(); i += 2)
    out.push_back({Child::Step::kKey, {}, 0, obj.dict_items[i], obj.dict_items[i + 1]});
  if (obj.state != kNoNode) out.push_back({Child::Step::kAttr, kStateAttr, 0, kNoNode, obj.state});
}

// holder_[n]: some tensor (or malformed rebuild call) is reachable from n.
// Computed backwards from those nodes over reversed child edges, so shared
// subgraphs and cycles cost O(nodes + edges) once; the walk then skips every
// subgraph that names no tensor.
void Recognizer::MarkHolders() {
  size_t n_nodes = g_.size();
  std::vector<size_t> first(n_nodes + 1, 0);
  std::vector<Child> children;
  for (NodeId n = 0; n < n_nodes; ++n) {
    Children(n, children);
    for (const Child& c : children) ++first[c.node + 1];
  }
  for (size_t i = 0; i < n_nodes; ++i) first[i + 1] += first[i];
  std::vector<NodeId> parents(first[n_nodes]);
  std::vector<size_t> fill(first.begin(), first.end() - 1);
  for (NodeId n = 0; n < n_nodes; ++n) {
    Children(n, children);
    for (const Child& c : children) parents[fill[c.node]++] = n;
  }
  holder_.assign(n_nodes, false);
  std::vector<NodeId> queue;
  for (const auto& [n, view] : views_) queue.push_back(n);
  for (const auto& [n, status] : malformed_) queue.push_back(n);
  for (NodeId n : queue) holder_[n] = true;
  while (!queue.empty()) {
    NodeId n = queue.back();
    queue.pop_back();
    for (size_t i = first[n]; i < first[n + 1]; ++i) {
      NodeId p = parents[i];
      if (!holder_[p]) {
        holder_[p] = true;
        queue.push_back(p);
      }
    }
  }
}

PathElem Recognizer::Elem(const Child& c) const {
  switch (c.step) {
    case Child::Step::kIndex: return {PathElem::Type::kIndex, {}, c.index};
    case Child::Step::kKey: return KeyElem(g_, c.key);
    case Child::Step::kAttr: return {PathElem::Type::kAttr, std::string(c.attr), 0};
  }
  return {};
}

void Recognizer::Emit(NodeId node, const View& view) {
  Tensor t;
  t.path = path_;
  t.name = JoinPath(path_);
  t.dtype = view.dtype;
  t.shape = view.shape;
  t.stride = view.stride;
  t.storage_offset = view.storage_offset;
  t.storage = view.storage;
  t.requires_grad = view.requires_grad;
  t.is_parameter = view.is_parameter;
  t.quantized = view.quantized;
  t.node = node;
  t.rebuild = view.rebuild;
  t.args = view.args;
  t.pid = view.pid;
  Storage& s = out_.storages[view.storage];
  if (s.untyped && !typed_by_first_tensor_[view.storage]) {
    s.dtype = view.dtype;
    typed_by_first_tensor_[view.storage] = true;
  }
  out_.tensors.push_back(std::move(t));
}

Status Recognizer::Walk(NodeId root) {
  if (root == kNoNode || root >= g_.size() || !holder_[root]) return Status::OK();
  struct Frame {
    NodeId node;
    std::vector<Child> children;
    size_t next = 0;
  };
  std::vector<bool> on_path(g_.size(), false);
  std::vector<Frame> stack;
  uint64_t visits = 0;
  auto spend = [&](uint64_t steps) -> Status {
    visits += steps;
    if (visits > options_.max_graph_visits)
      return Status::Limit("naming tensors visits more than " + std::to_string(options_.max_graph_visits) +
                           " graph nodes (--max-graph-visits)");
    return Status::OK();
  };
  // Enters `node` with path_ already extended to it.
  auto enter = [&](NodeId node) -> Status {
    ZF_TRY(spend(1));
    if (path_.size() > options_.max_path_depth)
      return Status::Limit("a tensor path is deeper than " + std::to_string(options_.max_path_depth) +
                           " steps (--max-path-depth)");
    if (auto bad = malformed_.find(node); bad != malformed_.end()) {
      Status s = bad->second;
      s.WithRecord(JoinPath(path_));
      return s;
    }
    if (auto v = views_.find(node); v != views_.end()) {
      // The tensor keeps its path: each step of it counts as a visit, so
      // paths multiplied by shared subgraphs cannot exhaust memory.
      ZF_TRY(spend(path_.size()));
      Emit(node, v->second);
    }
    Frame f{node, {}, 0};
    Children(node, f.children);
    on_path[node] = true;
    stack.push_back(std::move(f));
    return Status::OK();
  };
  ZF_TRY(enter(root));
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == top.children.size()) {
      on_path[top.node] = false;
      stack.pop_back();
      if (!path_.empty()) path_.pop_back();
      continue;
    }
    const Child& c = top.children[top.next++];
    // Skip subgraphs without tensors, and cycles back into the path.
    if (!holder_[c.node] || on_path[c.node]) continue;
    path_.push_back(Elem(c));
    ZF_TRY(enter(c.node));
  }
  return Status::OK();
}

Result<Recognized> Recognizer::Run(NodeId root) {
  ZF_TRY(ScanPids());
  ClassifyAll();
  MarkHolders();
  ZF_TRY(Walk(root));
  // torch's unpickler runs every rebuild call, reached from the root or not.
  NodeId first_bad = kNoNode;
  for (const auto& [n, status] : malformed_) first_bad = std::min(first_bad, n);
  if (first_bad != kNoNode) return malformed_.at(first_bad);
  return std::move(out_);
}

}  // namespace

std::string JoinPath(std::span<const PathElem> path) {
  std::string out;
  for (const PathElem& e : path) {
    if (!out.empty() || &e != path.data()) out += '.';
    if (e.type == PathElem::Type::kStrKey || e.type == PathElem::Type::kAttr) {
      out += e.str;
    } else {
      out += std::to_string(e.num);
    }
  }
  return out;
}

Result<std::optional<StoragePid>> ParseStoragePid(const Graph& g, NodeId node, Format format) {
  NodeId v = g.PersId(node);
  if (v == kNoNode || v >= g.size() || g.kind(v) != Kind::kTuple)
    return Status::Corrupt("persistent id is a " +
                           std::string(v < g.size() ? KindName(g.kind(v)) : "missing value") + ", not a tuple");
  std::span<const NodeId> items = g.Items(v);
  std::optional<std::string_view> tag = items.empty() ? std::nullopt : Text(g, items[kPidTag]);
  if (tag && format == Format::kTorchLegacy && *tag == kModulePidTag) return std::optional<StoragePid>();
  if (!tag || *tag != kStoragePidTag)
    return Status::Corrupt("persistent id type is " + (tag ? "'" + std::string(*tag) + "'" : std::string("not a str")) +
                           ", not 'storage'");
  size_t expected = format == Format::kTorchLegacy ? kLegacyStoragePidItems : kZipStoragePidItems;
  if (items.size() != expected)
    return Status::Corrupt("storage persistent id has " + std::to_string(items.size()) + " items, not " +
                           std::to_string(expected));
  StoragePid pid;
  NodeId cls = items[kPidClass];
  if (g.kind(cls) != Kind::kGlobal)
    return Status::Corrupt("storage class is a " + std::string(KindName(g.kind(cls))) + ", not a global");
  if (IsTorchModule(g.GlobalModule(cls)) && IsUntypedStorageClass(g.GlobalName(cls))) {
    pid.untyped = true;
  } else {
    if (IsTorchModule(g.GlobalModule(cls))) pid.dtype = FromStorageClass(g.GlobalName(cls));
    if (!pid.dtype) return Status::Corrupt("storage class " + GlobalText(g, cls) + " is not a torch storage type");
  }
  NodeId key = items[kPidKey];
  if (g.kind(key) == Kind::kStr) {
    pid.key = g.AsStr(key);
  } else if (g.kind(key) == Kind::kInt) {
    pid.key = std::to_string(g.AsInt(key));
  } else {
    return Status::Corrupt("storage key is a " + std::string(KindName(g.kind(key))) + ", not a str");
  }
  std::optional<std::string_view> location = Text(g, items[kPidLocation]);
  if (!location)
    return Status::Corrupt("storage '" + pid.key + "' location is a " + std::string(KindName(g.kind(items[kPidLocation]))) +
                           ", not a str");
  pid.location = *location;
  NodeId numel = items[kPidNumel];
  if (g.kind(numel) != Kind::kInt || g.AsInt(numel) < 0)
    return Status::Corrupt("storage '" + pid.key + "' numel is " +
                           (g.kind(numel) == Kind::kInt ? std::to_string(g.AsInt(numel))
                                                        : "a " + std::string(KindName(g.kind(numel)))) +
                           ", not a count");
  pid.numel = static_cast<uint64_t>(g.AsInt(numel));
  uint32_t itemsize = pid.untyped ? 1 : Info(*pid.dtype).itemsize;
  std::optional<uint64_t> nbytes = io::CheckedMul<uint64_t>(pid.numel, itemsize);
  if (!nbytes || *nbytes > static_cast<uint64_t>(INT64_MAX))
    return Status::Corrupt("storage '" + pid.key + "' of " + std::to_string(pid.numel) + " " +
                           std::to_string(itemsize) + "-byte elements overflows");
  pid.nbytes = *nbytes;
  if (format == Format::kTorchLegacy && g.kind(items[kPidViewMetadata]) != Kind::kNone)
    return Status::Unsupported("storage '" + pid.key + "' is a view of another storage (view metadata, torch < 0.4)");
  return std::optional<StoragePid>(std::move(pid));
}

RecognizeOptions RecognizeOptionsFor(Format format, const ReadOptions& options) {
  RecognizeOptions r;
  r.format = format;
  r.max_graph_visits = options.max_graph_visits;
  r.max_path_depth = options.max_path_depth;
  return r;
}

Result<Recognized> RecognizeTensors(const Graph& graph, NodeId root, const RecognizeOptions& options) {
  Recognizer r(graph, options);
  return r.Run(root);
}

}  // namespace zerofold::torch
