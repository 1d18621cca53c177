#include "pickle/decoder.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "io/cursor.h"
#include "pickle/long.h"
#include "pickle/opcodes.h"
#include "pickle/safety.h"
#include "pickle/text_args.h"

namespace zerofold::pickle {

namespace {

// Python refuses to convert longer decimal text to an int
// (sys.int_info.default_max_str_digits); we take no more from INT/LONG.
constexpr size_t kMaxDecimalDigits = 4300;

// Graph payloads are at most this long (a node keeps a 32-bit length).
constexpr uint64_t kMaxPayload = UINT32_MAX;

constexpr std::array<std::string_view, 256> kOpNames = [] {
  std::array<std::string_view, 256> names{};
  for (int i = 0; i < 256; ++i) names[i] = OpName(static_cast<uint8_t>(i));
  return names;
}();

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kBigInt: return "int";
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
  return "value";
}

ObjectData MakeCall(ObjectOp op, NodeId callable, NodeId args, NodeId kwargs = kNoNode) {
  ObjectData d;
  d.op = op;
  d.callable = callable;
  d.args = args;
  d.kwargs = kwargs;
  return d;
}

bool IsGetattrName(std::string_view module, std::string_view name) {
  return name == "getattr" && (module == "builtins" || module == "__builtin__");
}

// A name an Enum member can have: a Python identifier that is not private or
// a dunder (Enum refuses those as members).
bool IsMemberName(std::string_view s) {
  if (s.empty() || s.starts_with("__") || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  });
}

class Decoder {
 public:
  Decoder(std::span<const std::byte> bytes, uint64_t base_offset, const DecodeLimits& limits)
      : in_(bytes), base_(base_offset), limits_(limits), g_(out_.graph) {
    // torch's data.pkl has about a node per 8 bytes, a byte of strings per
    // 3 and a tuple item per 9: reserving that avoids most regrowth copies.
    size_t n = bytes.size();
    g_.Reserve(n / 7, n / 3, n / 8);
    depth_.reserve(n / 7);
  }

  Result<Decoded> Run();

 private:
  Status Step(uint8_t byte);

  // Errors at the current opcode.
  Status Fail(Code code, std::string why) const {
    Status s = code == Code::kCorrupt  ? Status::Corrupt(std::move(why))
               : code == Code::kLimit ? Status::Limit(std::move(why))
                                      : Status::Unsupported(std::move(why));
    s.WithOffset(op_offset_);
    return s;
  }
  Status Corrupt(std::string why) const { return Fail(Code::kCorrupt, std::string(name_) + ": " + why); }
  Status DepthLimit() const {
    return Fail(Code::kLimit, "pickle nesting > " + std::to_string(limits_.max_depth) + " (--max-pickle-depth)");
  }

  // Argument readers, each checked against the bytes left; they fail as
  // "truncated". The hot loop keeps its own position rather than an
  // io::Cursor so that these checks inline.
  size_t Left() const { return in_.size() - pos_; }
  // The next n bytes, consumed; nullptr (nothing consumed) when fewer are
  // left: the caller returns Truncated(n).
  const std::byte* Arg(size_t n) {
    if (Left() < n) return nullptr;
    const std::byte* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  Status Truncated(size_t n) const;
  // The payload after a count of `width` bytes (1, 4 or 8), checked against
  // the bytes left; 4-byte counts of BINSTRING and LONG4 are signed.
  Result<std::string_view> Counted(size_t width, bool is_signed);
  Result<std::string_view> Payload(uint64_t declared);
  Result<std::string_view> Line();

  // The stack. Values below the innermost MARK (the fence) are out of reach
  // until POP_MARK or an opcode consuming the mark, as in CPython.
  Status Need(size_t n) const {
    if (stack_.size() - fence_ >= n) return Status::OK();
    return Corrupt("stack underflow: needs " + std::to_string(n) + " values, " +
                   std::to_string(stack_.size() - fence_) + (marks_.empty() ? " on the stack" : " above the MARK"));
  }
  NodeId Pop() {
    NodeId v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // Closes the innermost MARK; returns where its items start on the stack.
  Result<size_t> PopMark();
  // The container below a MARK just closed at `mark` (APPENDS, SETITEMS...).
  Result<NodeId> TargetBelow(size_t mark) const;
  std::span<const NodeId> ItemsFrom(size_t mark) const { return {stack_.data() + mark, stack_.size() - mark}; }

  // Records a node built by this opcode and pushes it.
  Status PushNew(NodeId id, uint32_t depth = 0) {
    depth_.push_back(depth);
    if (depth > limits_.max_depth) return DepthLimit();
    stack_.push_back(id);
    return Status::OK();
  }
  uint32_t DepthOver(std::span<const NodeId> items) const {
    uint32_t d = 0;
    for (NodeId id : items) d = std::max(d, depth_[id]);
    return d + 1;
  }
  // A container gained `items`: it is at least one deeper than each.
  Status Deepen(NodeId target, std::span<const NodeId> items) {
    uint32_t d = DepthOver(items);
    if (d > depth_[target]) depth_[target] = d;
    return d > limits_.max_depth ? DepthLimit() : Status::OK();
  }
  Status NewSequence(Kind kind, size_t mark) {
    std::span<const NodeId> items = ItemsFrom(mark);
    UseAll(items);
    uint32_t depth = DepthOver(items);
    NodeId id = g_.AddSequence(kind, items);
    stack_.resize(mark);
    return PushNew(id, depth);
  }
  Status NewObject(ObjectData data) {
    NodeId parts[3] = {data.callable, data.args, data.kwargs};
    uint32_t depth = DepthOver(std::span<const NodeId>(parts, data.kwargs == kNoNode ? 2 : 3));
    return PushNew(g_.AddObject(std::move(data)), depth);
  }

  Status MemoPut(uint64_t index);
  Status MemoGet(uint64_t index);

  Status NewGlobal(std::string_view module, std::string_view name);
  Status Reduce();
  Status NewObj(bool ex);
  Status Build();
  Status AddItems(Op op, NodeId target, std::span<const NodeId> items);
  Status Text(Op op, std::string_view line);
  Status Unicode(std::string_view payload);
  Status ByteString(std::string_view payload);
  Status Integer(std::string_view payload);

  // Safety. builtins.getattr is judged by use: REDUCE(getattr, (a global, a
  // member name)) is how Python >= 3.11 pickles an Enum member and runs no
  // code; any other use of getattr, or calling what it returned, is unsafe.
  void RecordUnsafe(NodeId global);
  void Use(NodeId id) {
    if (!getattrs_.empty()) UseSlow(id);
  }
  void UseAll(std::span<const NodeId> ids) {
    if (!getattrs_.empty())
      for (NodeId id : ids) UseSlow(id);
  }
  bool IsGetattr(NodeId id) const { return std::binary_search(getattrs_.begin(), getattrs_.end(), id); }
  void UseSlow(NodeId id) {
    if (IsGetattr(id)) RecordUnsafe(id);
  }
  // `id` is about to be called (or built): if getattr made it, that is unsafe.
  void Call(NodeId id) {
    if (members_.empty()) return;
    auto it = members_.find(id);
    if (it != members_.end()) RecordUnsafe(it->second);
  }
  bool IsEnumMember(NodeId callable, NodeId args) const;

  std::span<const std::byte> in_;
  uint64_t base_;
  size_t pos_ = 0;
  const DecodeLimits& limits_;
  Decoded out_;
  Graph& g_;
  uint64_t op_offset_ = 0;
  std::string_view name_;  // of the current opcode
  bool stopped_ = false;

  std::vector<NodeId> stack_;
  std::vector<size_t> marks_;
  size_t fence_ = 0;
  std::vector<uint32_t> depth_;  // per node

  std::vector<NodeId> memo_;  // dense part; kNoNode for holes
  std::unordered_map<uint64_t, NodeId> sparse_memo_;
  uint64_t memo_count_ = 0;

  std::vector<NodeId> getattrs_;  // getattr globals, ascending (ids grow)
  std::unordered_map<NodeId, NodeId> members_;  // Enum member -> its getattr
  std::unordered_set<std::string> unsafe_seen_;
  int proto_ = 0;  // the last PROTO's protocol
};

Status Decoder::Truncated(size_t n) const {
  return Fail(Code::kCorrupt,
              "truncated: " + std::string(name_) + " needs " + std::to_string(n) + " bytes, " + std::to_string(Left()) + " left");
}

Result<std::string_view> Decoder::Counted(size_t width, bool is_signed) {
  const std::byte* p = Arg(width);
  if (!p) return Truncated(width);
  uint64_t n = width == 1 ? std::to_integer<uint64_t>(*p) : width == 4 ? io::DecodeU32le(p) : io::DecodeU64le(p);
  if (is_signed && width == 4 && n > INT32_MAX)
    return Corrupt("negative byte count " + std::to_string(static_cast<int32_t>(n)));
  return Payload(n);
}

Result<std::string_view> Decoder::Payload(uint64_t declared) {
  if (std::cmp_greater(declared, Left()))
    return Fail(Code::kCorrupt, "truncated: " + std::string(name_) + " declares " + std::to_string(declared) +
                                    " bytes, " + std::to_string(Left()) + " left");
  if (declared > kMaxPayload)
    return Fail(Code::kUnsupported, std::string(name_) + " of " + std::to_string(declared) +
                                        " bytes: payloads of 4 GiB or more are not supported");
  const std::byte* p = Arg(static_cast<size_t>(declared));  // fits: checked above
  return io::AsChars({p, static_cast<size_t>(declared)});
}

Result<std::string_view> Decoder::Line() {
  std::span<const std::byte> rest = in_.subspan(pos_);
  const void* nl = rest.empty() ? nullptr : std::memchr(rest.data(), '\n', rest.size());
  if (nl == nullptr)
    return Fail(Code::kCorrupt, "truncated: " + std::string(name_) + " argument has no line end in the " +
                                    std::to_string(rest.size()) + " bytes left");
  size_t n = static_cast<const std::byte*>(nl) - rest.data();
  std::string_view line = io::AsChars(rest.first(n));
  pos_ += n + 1;  // the line and its '\n', found within rest
  return line;
}

Result<size_t> Decoder::PopMark() {
  if (marks_.empty()) return Corrupt("no MARK is open");
  size_t mark = marks_.back();
  marks_.pop_back();
  fence_ = marks_.empty() ? 0 : marks_.back();
  return mark;
}

Result<NodeId> Decoder::TargetBelow(size_t mark) const {
  if (mark <= fence_) return Corrupt("stack underflow: no container below the MARK");
  return stack_[mark - 1];
}

void Decoder::RecordUnsafe(NodeId global) {
  std::string name = std::string(g_.GlobalModule(global)) + "." + std::string(g_.GlobalName(global));
  if (unsafe_seen_.insert(name).second) out_.unsafe_globals.push_back(std::move(name));
}

Status Decoder::NewGlobal(std::string_view module, std::string_view name) {
  NodeId id = g_.AddGlobal(module, name);
  if (IsGetattrName(module, name)) {
    getattrs_.push_back(id);
  } else if (IsUnsafeGlobal(module, name, proto_)) {
    RecordUnsafe(id);
  }
  return PushNew(id);
}

bool Decoder::IsEnumMember(NodeId callable, NodeId args) const {
  if (!IsGetattr(callable)) return false;
  if (g_.kind(args) != Kind::kTuple) return false;
  std::span<const NodeId> a = g_.Items(args);
  if (a.size() != 2 || g_.kind(a[0]) != Kind::kGlobal || g_.kind(a[1]) != Kind::kStr) return false;
  std::string_view module = g_.GlobalModule(a[0]), name = g_.GlobalName(a[0]);
  if (IsGetattrName(module, name) || IsUnsafeGlobal(module, name, proto_)) return false;
  return IsMemberName(g_.AsStr(a[1]));
}

Status Decoder::Reduce() {
  ZF_TRY(Need(2));
  NodeId args = Pop();
  NodeId callable = Pop();
  bool member = IsEnumMember(callable, args);
  if (!member) Use(callable);
  Call(callable);
  Use(args);
  ZF_TRY(NewObject(MakeCall(ObjectOp::kReduce, callable, args)));
  if (member) members_.emplace(stack_.back(), callable);
  return Status::OK();
}

Status Decoder::NewObj(bool ex) {
  ZF_TRY(Need(ex ? 3 : 2));
  NodeId kwargs = ex ? Pop() : kNoNode;
  NodeId args = Pop();
  NodeId cls = Pop();
  if (g_.kind(args) != Kind::kTuple) return Corrupt("args is a " + std::string(KindName(g_.kind(args))) + ", not a tuple");
  if (ex && g_.kind(kwargs) != Kind::kDict)
    return Corrupt("kwargs is a " + std::string(KindName(g_.kind(kwargs))) + ", not a dict");
  Use(cls);
  Call(cls);
  Use(args);
  if (ex) Use(kwargs);
  return NewObject(MakeCall(ex ? ObjectOp::kNewObjEx : ObjectOp::kNewObj, cls, args, kwargs));
}

Status Decoder::Build() {
  ZF_TRY(Need(2));
  NodeId state = Pop();
  NodeId target = stack_.back();
  if (g_.kind(target) != Kind::kObject)
    return Fail(Code::kUnsupported, "BUILD onto a " + std::string(KindName(g_.kind(target))) +
                                        ": only objects take BUILD here");
  ObjectData& obj = g_.MutableObject(target);
  if (obj.state != kNoNode) return Fail(Code::kUnsupported, "BUILD: a second BUILD on one object");
  Call(target);
  Use(state);
  obj.state = state;
  return Deepen(target, {&state, 1});
}

// APPEND(S) onto a list, SETITEM(S) onto a dict, ADDITEMS onto a set; the
// first two also onto an object (recorded as its list_items, dict_items).
Status Decoder::AddItems(Op op, NodeId target, std::span<const NodeId> items) {
  bool pairs = op == Op::SETITEM || op == Op::SETITEMS;
  Kind container = pairs ? Kind::kDict : op == Op::ADDITEMS ? Kind::kSet : Kind::kList;
  if (pairs && items.size() % 2 != 0) return Corrupt("odd number of items (" + std::to_string(items.size()) + ")");
  Kind kind = g_.kind(target);
  if (kind == container) {
    g_.Extend(target, items);
  } else if (kind == Kind::kObject && op == Op::ADDITEMS) {
    return Fail(Code::kUnsupported, "ADDITEMS onto an object: only sets take ADDITEMS here");
  } else if (kind == Kind::kObject) {
    ObjectData& obj = g_.MutableObject(target);
    std::vector<NodeId>& dst = pairs ? obj.dict_items : obj.list_items;
    dst.insert(dst.end(), items.begin(), items.end());
  } else {
    return Corrupt("onto a " + std::string(KindName(kind)));
  }
  UseAll(items);
  return Deepen(target, items);
}

Status Decoder::MemoPut(uint64_t index) {
  ZF_TRY(Need(1));
  if (index >= limits_.max_memo)
    return Fail(Code::kLimit, std::string(name_) + " " + std::to_string(index) + ": memo index past " +
                                  std::to_string(limits_.max_memo) + " entries (--max-pickle-memo)");
  NodeId value = stack_.back();
  // Dense unless the index jumps far ahead: a hostile LONG_BINPUT must not
  // make us allocate for the entries it skipped.
  if (index == memo_.size() && sparse_memo_.empty()) {  // what picklers write
    memo_.push_back(value);
    ++memo_count_;
  } else if (index < memo_.size() + memo_.size() + 1024) {
    if (index >= memo_.size()) memo_.resize(index + 1, kNoNode);
    NodeId& slot = memo_[index];
    if (slot == kNoNode && (sparse_memo_.empty() || sparse_memo_.erase(index) == 0)) ++memo_count_;
    slot = value;
  } else if (sparse_memo_.insert_or_assign(index, value).second) {
    ++memo_count_;
  }
  return Status::OK();
}

Status Decoder::MemoGet(uint64_t index) {
  NodeId v = kNoNode;
  if (index < memo_.size()) v = memo_[index];
  if (v == kNoNode && !sparse_memo_.empty()) {
    auto it = sparse_memo_.find(index);
    if (it != sparse_memo_.end()) v = it->second;
  }
  if (v == kNoNode) return Corrupt("memo has no entry " + std::to_string(index));
  stack_.push_back(v);
  return Status::OK();
}

Status Decoder::Unicode(std::string_view payload) {
  size_t bad = 0;
  if (!IsUtf8(payload, &bad)) return Corrupt("not UTF-8 (bad sequence at byte " + std::to_string(bad) + ")");
  return PushNew(g_.AddStr(payload));
}

// Protocol 0-2 str (Python 2 byte strings): a str when the bytes are UTF-8
// (what torch.load's encoding="utf-8" makes of them), else bytes.
Status Decoder::ByteString(std::string_view payload) {
  size_t bad = 0;
  return PushNew(IsUtf8(payload, &bad) ? g_.AddStr(payload) : g_.AddBytes(payload));
}

Status Decoder::Integer(std::string_view payload) {
  std::optional<int64_t> v = LongToInt64(payload);
  return PushNew(v ? g_.AddInt(*v) : g_.AddBigInt(TrimLong(payload)));
}

// INT, LONG, FLOAT, STRING, UNICODE, PERSID, GET and PUT: protocol 0 forms.
Status Decoder::Text(Op op, std::string_view line) {
  switch (op) {
    case Op::INT:
    case Op::LONG:
    case Op::GET:
    case Op::PUT: {
      if (op == Op::INT && (line == "00" || line == "01")) return PushNew(g_.AddBool(line == "01"));
      if (op == Op::LONG && line.ends_with('L')) line.remove_suffix(1);
      int64_t v = 0;
      bool fits = false;
      if (!ParseDecimal(line, &v, &fits)) return Corrupt("argument is not a decimal integer");
      if (op == Op::GET || op == Op::PUT) {
        if (!fits || v < 0) return Corrupt("memo index " + std::string(line) + " is out of range");
        return op == Op::GET ? MemoGet(static_cast<uint64_t>(v)) : MemoPut(static_cast<uint64_t>(v));
      }
      if (fits) return PushNew(g_.AddInt(v));
      size_t digits = line.size() - (line[0] == '-' || line[0] == '+' ? 1 : 0);
      if (digits > kMaxDecimalDigits)
        return Fail(Code::kUnsupported, std::string(name_) + " of " + std::to_string(digits) +
                                            " digits: Python converts at most 4300");
      std::string le;
      DecimalToLong(line, &le);  // checked by ParseDecimal
      return PushNew(g_.AddBigInt(le));
    }
    case Op::FLOAT: {
      std::optional<double> v = ParseFloat(line);
      if (!v) return Corrupt("argument is not a float");
      return PushNew(g_.AddFloat(*v));
    }
    case Op::STRING: {
      if (line.size() < 2 || line.front() != line.back() || (line.front() != '\'' && line.front() != '"'))
        return Corrupt("argument is not quoted");
      std::string bytes, why;
      if (!DecodeStringEscape(line.substr(1, line.size() - 2), &bytes, &why)) return Corrupt(why);
      return ByteString(bytes);
    }
    case Op::UNICODE: {
      std::string utf8, why;
      if (!DecodeRawUnicodeEscape(line, &utf8, &why)) return Corrupt(why);
      return PushNew(g_.AddStr(utf8));
    }
    case Op::PERSID: {
      if (!std::all_of(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        return Corrupt("persistent id is not ASCII");
      NodeId pid = g_.AddStr(line);
      depth_.push_back(0);
      return PushNew(g_.AddPersId(pid), 1);
    }
    default: return Status::Internal("Text() called for " + std::string(name_));
  }
}

Result<Decoded> Decoder::Run() {
  while (!stopped_) {
    op_offset_ = base_ + pos_;
    if (Left() == 0)
      return Fail(Code::kCorrupt, "truncated: the pickle ends after " + std::to_string(pos_) + " bytes, before STOP");
    uint8_t byte = std::to_integer<uint8_t>(in_[pos_++]);
    name_ = kOpNames[byte];
    if (name_.empty()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", byte);
      return Fail(Code::kCorrupt, std::string("unknown opcode ") + hex);
    }
    ZF_TRY(Step(byte));
    if (stack_.size() > limits_.max_stack)
      return Fail(Code::kLimit, "pickle stack > " + std::to_string(limits_.max_stack) + " values (--max-pickle-stack)");
    if (g_.size() > limits_.max_nodes)
      return Fail(Code::kLimit, "pickle has more than " + std::to_string(limits_.max_nodes) +
                                    " values (--max-pickle-nodes)");
  }
  out_.consumed = pos_;
  return std::move(out_);
}

Status Decoder::Step(uint8_t byte) {
  const Op op = static_cast<Op>(byte);
  switch (op) {
    // Framing and protocol.
    case Op::PROTO: {
      const std::byte* p = Arg(1);
      if (!p) return Truncated(1);
      int v = std::to_integer<int>(*p);
      if (v > kHighestProtocol)
        return Fail(Code::kUnsupported, "PROTO " + std::to_string(v) + ": protocols above 5 are not supported");
      out_.protocol = std::max(out_.protocol, v);
      proto_ = v;  // what Python's find_class tests for its name mapping
      return Status::OK();
    }
    case Op::FRAME: {
      const std::byte* p = Arg(8);
      if (!p) return Truncated(8);
      uint64_t n = io::DecodeU64le(p);
      if (std::cmp_greater(n, Left()))
        return Fail(Code::kCorrupt, "truncated: FRAME declares " + std::to_string(n) + " bytes, " +
                                        std::to_string(Left()) + " left");
      return Status::OK();  // frames only group opcodes; nothing to check inside
    }
    case Op::STOP: {
      ZF_TRY(Need(1));
      if (!marks_.empty()) return Corrupt(std::to_string(marks_.size()) + " MARKs still open");
      if (stack_.size() != 1) return Corrupt(std::to_string(stack_.size() - 1) + " values left below the result");
      out_.root = stack_.back();
      Use(out_.root);
      stopped_ = true;
      return Status::OK();
    }

    // Scalars.
    case Op::NONE: return PushNew(g_.AddNone());
    case Op::NEWTRUE: return PushNew(g_.AddBool(true));
    case Op::NEWFALSE: return PushNew(g_.AddBool(false));
    case Op::BININT: {
      const std::byte* p = Arg(4);
      if (!p) return Truncated(4);
      return PushNew(g_.AddInt(static_cast<int32_t>(io::DecodeU32le(p))));
    }
    case Op::BININT1: {
      const std::byte* p = Arg(1);
      if (!p) return Truncated(1);
      return PushNew(g_.AddInt(std::to_integer<uint8_t>(*p)));
    }
    case Op::BININT2: {
      const std::byte* p = Arg(2);
      if (!p) return Truncated(2);
      return PushNew(g_.AddInt(io::DecodeU16le(p)));
    }
    case Op::LONG1:
    case Op::LONG4: {
      ZF_ASSIGN_OR_RETURN(std::string_view payload, Counted(op == Op::LONG1 ? 1 : 4, true));
      return Integer(payload);
    }
    case Op::BINFLOAT: {
      const std::byte* p = Arg(8);
      if (!p) return Truncated(8);
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | std::to_integer<uint64_t>(p[i]);  // big-endian
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return PushNew(g_.AddFloat(d));
    }
    case Op::INT:
    case Op::LONG:
    case Op::FLOAT:
    case Op::STRING:
    case Op::UNICODE:
    case Op::PERSID:
    case Op::GET:
    case Op::PUT: {
      ZF_ASSIGN_OR_RETURN(std::string_view line, Line());
      return Text(op, line);
    }

    // Strings and bytes.
    case Op::BINSTRING:
    case Op::SHORT_BINSTRING: {
      ZF_ASSIGN_OR_RETURN(std::string_view payload, Counted(op == Op::SHORT_BINSTRING ? 1 : 4, true));
      return ByteString(payload);
    }
    case Op::SHORT_BINUNICODE:
    case Op::BINUNICODE:
    case Op::BINUNICODE8: {
      size_t width = op == Op::SHORT_BINUNICODE ? 1 : op == Op::BINUNICODE ? 4 : 8;
      ZF_ASSIGN_OR_RETURN(std::string_view payload, Counted(width, false));
      return Unicode(payload);
    }
    case Op::SHORT_BINBYTES:
    case Op::BINBYTES:
    case Op::BINBYTES8:
    case Op::BYTEARRAY8: {
      size_t width = op == Op::SHORT_BINBYTES ? 1 : op == Op::BINBYTES ? 4 : 8;
      ZF_ASSIGN_OR_RETURN(std::string_view payload, Counted(width, false));
      return PushNew(g_.AddBytes(payload, op == Op::BYTEARRAY8 ? Kind::kByteArray : Kind::kBytes));
    }

    // Tuples, lists, dicts, sets.
    case Op::EMPTY_TUPLE: return PushNew(g_.AddSequence(Kind::kTuple, {}), 1);
    case Op::TUPLE1:
    case Op::TUPLE2:
    case Op::TUPLE3: {
      size_t n = byte - static_cast<uint8_t>(Op::TUPLE1) + 1;
      ZF_TRY(Need(n));
      return NewSequence(Kind::kTuple, stack_.size() - n);
    }
    case Op::TUPLE:
    case Op::LIST:
    case Op::FROZENSET: {
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      return NewSequence(op == Op::TUPLE ? Kind::kTuple : op == Op::LIST ? Kind::kList : Kind::kFrozenSet, mark);
    }
    case Op::DICT: {
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      size_t n = stack_.size() - mark;
      if (n % 2 != 0) return Corrupt("odd number of items (" + std::to_string(n) + ")");
      return NewSequence(Kind::kDict, mark);
    }
    case Op::EMPTY_LIST: return PushNew(g_.AddSequence(Kind::kList, {}), 1);
    case Op::EMPTY_DICT: return PushNew(g_.AddDict(), 1);
    case Op::EMPTY_SET: return PushNew(g_.AddSequence(Kind::kSet, {}), 1);
    case Op::APPEND: {
      ZF_TRY(Need(2));
      NodeId item = Pop();
      return AddItems(op, stack_.back(), {&item, 1});
    }
    case Op::SETITEM: {
      ZF_TRY(Need(3));
      NodeId kv[2] = {stack_[stack_.size() - 2], stack_.back()};
      stack_.resize(stack_.size() - 2);
      return AddItems(op, stack_.back(), kv);
    }
    case Op::APPENDS:
    case Op::SETITEMS:
    case Op::ADDITEMS: {
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      ZF_ASSIGN_OR_RETURN(NodeId target, TargetBelow(mark));
      ZF_TRY(AddItems(op, target, ItemsFrom(mark)));
      stack_.resize(mark);
      return Status::OK();
    }

    // Stack manipulation.
    case Op::MARK:
      if (marks_.size() >= limits_.max_depth) return DepthLimit();
      marks_.push_back(stack_.size());
      fence_ = stack_.size();
      return Status::OK();
    case Op::POP:
      // At a MARK with nothing above it, POP discards the MARK (as CPython).
      if (!marks_.empty() && marks_.back() == stack_.size()) return PopMark().status();
      ZF_TRY(Need(1));
      stack_.pop_back();
      return Status::OK();
    case Op::POP_MARK: {
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      stack_.resize(mark);
      return Status::OK();
    }
    case Op::DUP:
      ZF_TRY(Need(1));
      stack_.push_back(stack_.back());
      return Status::OK();

    // The memo.
    case Op::BINPUT:
    case Op::BINGET: {
      const std::byte* p = Arg(1);
      if (!p) return Truncated(1);
      uint64_t index = std::to_integer<uint8_t>(*p);
      return op == Op::BINPUT ? MemoPut(index) : MemoGet(index);
    }
    case Op::LONG_BINPUT:
    case Op::LONG_BINGET: {
      const std::byte* p = Arg(4);
      if (!p) return Truncated(4);
      uint64_t index = io::DecodeU32le(p);
      return op == Op::LONG_BINPUT ? MemoPut(index) : MemoGet(index);
    }
    case Op::MEMOIZE: return MemoPut(memo_count_);

    // Globals and objects.
    case Op::GLOBAL:
    case Op::INST: {
      ZF_ASSIGN_OR_RETURN(std::string_view module, Line());
      ZF_ASSIGN_OR_RETURN(std::string_view name, Line());
      size_t bad = 0;
      if (!IsUtf8(module, &bad) || !IsUtf8(name, &bad)) return Corrupt("module or name is not UTF-8");
      if (op == Op::GLOBAL) return NewGlobal(module, name);
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      ZF_TRY(NewGlobal(module, name));
      NodeId cls = Pop();
      Use(cls);  // INST calls it: getattr here is unsafe
      ZF_TRY(NewSequence(Kind::kTuple, mark));
      NodeId args = Pop();
      return NewObject(MakeCall(ObjectOp::kInst, cls, args));
    }
    case Op::STACK_GLOBAL: {
      ZF_TRY(Need(2));
      NodeId name = Pop();
      NodeId module = Pop();
      if (g_.kind(module) != Kind::kStr || g_.kind(name) != Kind::kStr)
        return Corrupt("module and name are " + std::string(KindName(g_.kind(module))) + " and " +
                       std::string(KindName(g_.kind(name))) + ", not str");
      // Copies: the views would dangle once the graph's storage grows.
      std::string m(g_.AsStr(module)), n(g_.AsStr(name));
      return NewGlobal(m, n);
    }
    case Op::OBJ: {
      ZF_ASSIGN_OR_RETURN(size_t mark, PopMark());
      if (stack_.size() == mark) return Corrupt("stack underflow: no class after the MARK");
      NodeId cls = stack_[mark];
      Use(cls);
      Call(cls);
      ZF_TRY(NewSequence(Kind::kTuple, mark + 1));
      NodeId args = Pop();
      stack_.pop_back();  // cls
      return NewObject(MakeCall(ObjectOp::kInst, cls, args));
    }
    case Op::REDUCE: return Reduce();
    case Op::NEWOBJ: return NewObj(false);
    case Op::NEWOBJ_EX: return NewObj(true);
    case Op::BUILD: return Build();
    case Op::BINPERSID: {
      ZF_TRY(Need(1));
      NodeId pid = Pop();
      Use(pid);
      return PushNew(g_.AddPersId(pid), depth_[pid] + 1);
    }

    // Valid, but not handled.
    case Op::EXT1:
    case Op::EXT2:
    case Op::EXT4: {
      size_t width = op == Op::EXT1 ? 1 : op == Op::EXT2 ? 2 : 4;
      const std::byte* p = Arg(width);
      if (!p) return Truncated(width);
      uint64_t code = width == 1 ? std::to_integer<uint64_t>(*p) : width == 2 ? io::DecodeU16le(p) : io::DecodeU32le(p);
      return Fail(Code::kUnsupported, std::string(name_) + " " + std::to_string(code) +
                                          ": the copyreg extension registry is not supported");
    }
    case Op::NEXT_BUFFER:
    case Op::READONLY_BUFFER:
      return Fail(Code::kUnsupported, std::string(name_) + ": out-of-band buffers are not supported");
  }
  return Status::Internal("no handler for opcode " + std::string(name_));
}

}  // namespace

Result<Decoded> Decode(std::span<const std::byte> bytes, uint64_t base_offset, const DecodeLimits& limits) {
  Decoder decoder(bytes, base_offset, limits);
  return decoder.Run();
}

}  // namespace zerofold::pickle
