#include "pickle/encoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "io/cursor.h"
#include "pickle/long.h"
#include "pickle/opcodes.h"

namespace zerofold::pickle {

namespace {

constexpr uint32_t kNotMemoized = UINT32_MAX;

// Writes a graph as CPython's C pickler (Modules/_pickle.c, save()) does at
// protocol 2, with an explicit stack of tasks standing in for its recursion.
// A task list entry is one step of a save_*() function; the order in which
// tasks run is the order in which CPython writes.
class Encoder {
 public:
  Encoder(const Graph& g, uint32_t max_depth) : g_(g), max_depth_(max_depth), memo_(g.size(), kNotMemoized) {}

  Result<std::vector<std::byte>> Run(NodeId root);

 private:
  enum class Step : uint8_t {
    kSave,         // save(node)
    kTupleEnd,     // save_tuple after the elements
    kCall,         // save_reduce after callable and args
    kListBatch,    // batch_list_exact from item `index`
    kDictBatch,    // batch_dict_exact from pair `index`
    kObjList,      // batch_list (an object's list_items) from item `index`
    kObjDict,      // batch_dict (an object's dict_items) from pair `index`
    kEmit,         // write opcode `index`
    kLeave,        // a container is done (nesting depth)
  };
  struct Task {
    Step step;
    NodeId node;
    uint32_t index;
  };

  void Push(Step step, NodeId node, uint32_t index = 0) { tasks_.push_back(Task{step, node, index}); }
  // Pushes saves of `items` so that they run in order.
  void PushSaves(std::span<const NodeId> items) {
    for (size_t i = items.size(); i-- > 0;) Push(Step::kSave, items[i]);
  }
  Status Enter() {
    if (++depth_ > max_depth_)
      return Status::Limit("pickle nesting > " + std::to_string(max_depth_) + " while encoding");
    Push(Step::kLeave, kNoNode);
    return Status::OK();
  }

  Status Save(NodeId id);
  Status Call(NodeId id);
  void Batch(Step step, NodeId id, uint32_t start);
  Status Check(NodeId id, const char* role) const {
    if (id < g_.size()) return Status::OK();
    return Status::InvalidArgument(std::string(role) + " refers to node " + std::to_string(id) + " of a graph of " +
                                   std::to_string(g_.size()));
  }
  Status Unwritable(NodeId id, std::string_view what) const {
    return Status::InvalidArgument("node " + std::to_string(id) + ": protocol 2 cannot write " + std::string(what) +
                                   " as it is");
  }

  void Op1(Op op) { out_.push_back(static_cast<std::byte>(op)); }
  void Raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_.insert(out_.end(), p, p + s.size());
  }
  void U32(uint32_t v) {
    std::byte b[4];
    io::EncodeU32le(b, v);
    out_.insert(out_.end(), b, b + 4);
  }
  void Int(int64_t v);
  void Long(std::string_view le);
  void Put(NodeId id);
  void Get(NodeId id) { MemoOp(Op::BINGET, Op::LONG_BINGET, memo_[id]); }
  void MemoOp(Op short_op, Op long_op, uint32_t index);
  bool Memoized(NodeId id) const { return memo_[id] != kNotMemoized; }

  const Graph& g_;
  const uint32_t max_depth_;
  uint32_t depth_ = 0;
  std::vector<uint32_t> memo_;  // per node: its memo index
  uint32_t next_memo_ = 0;
  std::vector<Task> tasks_;
  std::vector<std::byte> out_;
};

// save_long: the smallest of BININT1, BININT2, BININT for what fits in 32
// bits, else LONG1 (LONG4 past 255 bytes) with the shortest payload.
void Encoder::Int(int64_t v) {
  if (v >= 0 && v <= 0xff) {
    Op1(Op::BININT1);
    out_.push_back(static_cast<std::byte>(v));
  } else if (v >= 0 && v <= 0xffff) {
    Op1(Op::BININT2);
    out_.push_back(static_cast<std::byte>(v & 0xff));
    out_.push_back(static_cast<std::byte>(v >> 8));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    Op1(Op::BININT);
    U32(static_cast<uint32_t>(static_cast<int32_t>(v)));
  } else {
    Long(Int64ToLong(v));
  }
}

void Encoder::Long(std::string_view le) {
  if (le.size() < 256) {
    Op1(Op::LONG1);
    out_.push_back(static_cast<std::byte>(le.size()));
  } else {
    Op1(Op::LONG4);
    U32(static_cast<uint32_t>(le.size()));
  }
  Raw(le);
}

// memo_put takes the next index; memo_get fetches one. BINPUT/BINGET below
// 256, LONG_BINPUT/LONG_BINGET from there.
void Encoder::Put(NodeId id) {
  memo_[id] = next_memo_++;
  MemoOp(Op::BINPUT, Op::LONG_BINPUT, memo_[id]);
}

void Encoder::MemoOp(Op short_op, Op long_op, uint32_t index) {
  if (index < 256) {
    Op1(short_op);
    out_.push_back(static_cast<std::byte>(index));
  } else {
    Op1(long_op);
    U32(index);
  }
}

Result<std::vector<std::byte>> Encoder::Run(NodeId root) {
  ZF_TRY(Check(root, "the root"));
  out_.reserve(64 + g_.size() * 4);
  Op1(Op::PROTO);
  out_.push_back(std::byte{2});
  Push(Step::kSave, root);
  while (!tasks_.empty()) {
    Task t = tasks_.back();
    tasks_.pop_back();
    switch (t.step) {
      case Step::kSave: ZF_TRY(Save(t.node)); break;
      case Step::kCall: ZF_TRY(Call(t.node)); break;
      case Step::kEmit: Op1(static_cast<Op>(t.index)); break;
      case Step::kLeave: --depth_; break;
      case Step::kTupleEnd: {
        size_t n = g_.Items(t.node).size();
        if (Memoized(t.node)) {
          // The tuple was reached through its own elements (a recursive
          // tuple): drop what was pushed and fetch it from the memo.
          if (n <= 3) {
            for (size_t i = 0; i < n; ++i) Op1(Op::POP);
          } else {
            Op1(Op::POP_MARK);
          }
          Get(t.node);
        } else {
          Op1(n == 1 ? Op::TUPLE1 : n == 2 ? Op::TUPLE2 : n == 3 ? Op::TUPLE3 : Op::TUPLE);
          Put(t.node);
        }
        break;
      }
      case Step::kListBatch:
      case Step::kDictBatch:
      case Step::kObjList:
      case Step::kObjDict: Batch(t.step, t.node, t.index); break;
    }
  }
  Op1(Op::STOP);
  return std::move(out_);
}

Status Encoder::Save(NodeId id) {
  ZF_TRY(Check(id, "an item"));
  // save(): atoms first (never memoized), then the memo, then by type.
  switch (g_.kind(id)) {
    case Kind::kNone: Op1(Op::NONE); return Status::OK();
    case Kind::kBool: Op1(g_.AsBool(id) ? Op::NEWTRUE : Op::NEWFALSE); return Status::OK();
    case Kind::kInt: Int(g_.AsInt(id)); return Status::OK();
    case Kind::kBigInt: {
      std::string_view le = TrimLong(g_.AsStr(id));
      std::optional<int64_t> v = LongToInt64(le);
      if (v) {
        Int(*v);
      } else {
        Long(le);
      }
      return Status::OK();
    }
    case Kind::kFloat: {
      Op1(Op::BINFLOAT);
      uint64_t bits = static_cast<uint64_t>(g_.AsInt(id));  // the double's bits
      for (int i = 7; i >= 0; --i) out_.push_back(static_cast<std::byte>((bits >> (8 * i)) & 0xff));
      return Status::OK();
    }
    case Kind::kPersId: {
      // save_pers: the id, then BINPERSID; what it stands for is never memoized.
      ZF_TRY(Check(g_.PersId(id), "a persistent id"));
      ZF_TRY(Enter());
      Push(Step::kEmit, kNoNode, static_cast<uint32_t>(Op::BINPERSID));
      Push(Step::kSave, g_.PersId(id));
      return Status::OK();
    }
    default: break;
  }
  if (Memoized(id)) {
    Get(id);
    return Status::OK();
  }
  switch (g_.kind(id)) {
    case Kind::kStr: {
      std::string_view s = g_.AsStr(id);
      Op1(Op::BINUNICODE);
      U32(static_cast<uint32_t>(s.size()));  // under 4 GiB: a graph limit
      Raw(s);
      Put(id);
      return Status::OK();
    }
    case Kind::kGlobal: {
      std::string_view module = g_.GlobalModule(id), name = g_.GlobalName(id);
      if (module.find('\n') != std::string_view::npos || name.find('\n') != std::string_view::npos)
        return Unwritable(id, "a global whose name holds a line end");
      Op1(Op::GLOBAL);
      Raw(module);
      Raw("\n");
      Raw(name);
      Raw("\n");
      Put(id);
      return Status::OK();
    }
    case Kind::kTuple: {
      // save_tuple: EMPTY_TUPLE (not memoized), TUPLE1-3, or MARK ... TUPLE.
      std::span<const NodeId> items = g_.Items(id);
      if (items.empty()) {
        Op1(Op::EMPTY_TUPLE);
        return Status::OK();
      }
      ZF_TRY(Enter());
      Push(Step::kTupleEnd, id);
      if (items.size() > 3) Op1(Op::MARK);
      PushSaves(items);
      return Status::OK();
    }
    case Kind::kList:
    case Kind::kDict: {
      // save_list, save_dict: memoized before the items, so items may refer
      // back to the container.
      bool list = g_.kind(id) == Kind::kList;
      Op1(list ? Op::EMPTY_LIST : Op::EMPTY_DICT);
      Put(id);
      if (!g_.Items(id).empty()) {
        ZF_TRY(Enter());
        Push(list ? Step::kListBatch : Step::kDictBatch, id, 0);
      }
      return Status::OK();
    }
    case Kind::kObject: {
      const ObjectData& o = g_.Object(id);
      ZF_TRY(Check(o.callable, "an object's callable"));
      ZF_TRY(Check(o.args, "an object's args"));
      if (o.op == ObjectOp::kNewObjEx) return Unwritable(id, "NEWOBJ_EX (protocol 4)");
      if (o.op == ObjectOp::kInst && g_.kind(o.args) != Kind::kTuple) return Unwritable(id, "OBJ without an args tuple");
      ZF_TRY(Enter());
      Push(Step::kCall, id);
      if (o.op == ObjectOp::kInst) {
        Op1(Op::MARK);  // OBJ: MARK callable args... OBJ
        PushSaves(g_.Items(o.args));
      } else {
        Push(Step::kSave, o.args);
      }
      Push(Step::kSave, o.callable);
      return Status::OK();
    }
    case Kind::kBytes: return Unwritable(id, "bytes (protocol 3)");
    case Kind::kByteArray: return Unwritable(id, "bytearray (protocol 5)");
    case Kind::kSet: return Unwritable(id, "a set (protocol 4)");
    case Kind::kFrozenSet: return Unwritable(id, "a frozenset (protocol 4)");
    default: return Status::Internal("encoder: unhandled node kind");
  }
}

// save_reduce after REDUCE/NEWOBJ/OBJ: memoize (or, when the object was
// reached through its own arguments, drop it and fetch the memoized one),
// then list items, dict items, and BUILD with the state.
Status Encoder::Call(NodeId id) {
  const ObjectData& o = g_.Object(id);
  Op1(o.op == ObjectOp::kReduce ? Op::REDUCE : o.op == ObjectOp::kNewObj ? Op::NEWOBJ : Op::OBJ);
  if (Memoized(id)) {
    Op1(Op::POP);
    Get(id);
    return Status::OK();
  }
  Put(id);
  if (o.state != kNoNode) {
    ZF_TRY(Check(o.state, "an object's state"));
    Push(Step::kEmit, kNoNode, static_cast<uint32_t>(Op::BUILD));
    Push(Step::kSave, o.state);
  }
  if (!o.dict_items.empty()) Push(Step::kObjDict, id, 0);
  if (!o.list_items.empty()) Push(Step::kObjList, id, 0);
  return Status::OK();
}

// One batch of APPENDS or SETITEMS, and the task for the next.
//   batch_list_exact (a list): one item alone is APPEND; otherwise batches
//     of 1000 while items remain.
//   batch_dict_exact (a dict): one entry alone is SETITEM; otherwise batches
//     of 1000 while the last batch was full, so a dict of 1000 entries ends
//     with an empty MARK SETITEMS.
//   batch_list, batch_dict (an object's items, from an iterator): batches of
//     1000 while the last was full; a batch of one item is APPEND/SETITEM.
void Encoder::Batch(Step step, NodeId id, uint32_t start) {
  bool pairs = step == Step::kDictBatch || step == Step::kObjDict;
  bool exact = step == Step::kListBatch || step == Step::kDictBatch;
  std::span<const NodeId> items;
  if (exact) {
    items = g_.Items(id);
  } else {
    const ObjectData& o = g_.Object(id);
    items = pairs ? std::span<const NodeId>(o.dict_items) : std::span<const NodeId>(o.list_items);
  }
  size_t width = pairs ? 2 : 1;
  size_t count = items.size() / width;  // a trailing odd dict item is not written
  size_t left = count - start;
  bool single = exact ? (start == 0 && count == 1) : left == 1;
  if (!exact && left == 0) return;
  if (single) {
    Push(Step::kEmit, kNoNode, static_cast<uint32_t>(pairs ? Op::SETITEM : Op::APPEND));
    PushSaves(items.subspan(start * width, width));
    return;
  }
  Op1(Op::MARK);
  size_t end = start + std::min(left, kBatchSize);
  bool more = (step == Step::kListBatch) ? end < count : end - start == kBatchSize;
  if (more) Push(step, id, static_cast<uint32_t>(end));
  Push(Step::kEmit, kNoNode, static_cast<uint32_t>(pairs ? Op::SETITEMS : Op::APPENDS));
  PushSaves(items.subspan(start * width, (end - start) * width));
}

}  // namespace

Result<std::vector<std::byte>> Encode(const Graph& graph, NodeId root, uint32_t max_depth) {
  Encoder encoder(graph, max_depth);
  return encoder.Run(root);
}

size_t IntOpSize(int64_t v) {
  if (v >= 0 && v <= 0xffff) return v <= 0xff ? 1 + 1 : 1 + 2;  // BININT1, BININT2
  if (v >= INT32_MIN && v <= INT32_MAX) return 1 + 4;          // BININT
  return 1 + 1 + Int64ToLong(v).size();                         // LONG1: at most 8 bytes of payload
}

}  // namespace zerofold::pickle
