// Test helper: assembles pickle bytes opcode by opcode (pickletools names),
// for data.pkl files torch 1.13 cannot write and for broken ones. Nothing
// here is checked: tests state what they write.
#ifndef ZEROFOLD_TESTS_TORCH_PICKLE_WRITER_H_
#define ZEROFOLD_TESTS_TORCH_PICKLE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace zerofold::torch::testing {

class PickleWriter {
 public:
  PickleWriter& Proto(int v = 2) { return Op('\x80').Byte(v); }
  PickleWriter& Stop() { return Op('.'); }
  PickleWriter& Mark() { return Op('('); }
  PickleWriter& None() { return Op('N'); }
  PickleWriter& Bool(bool v) { return Op(v ? '\x88' : '\x89'); }
  PickleWriter& Int(int64_t v) {
    if (v >= 0 && v < 256) return Op('K').Byte(static_cast<int>(v));         // BININT1
    if (v >= INT32_MIN && v <= INT32_MAX) return Op('J').Le(static_cast<uint32_t>(v), 4);  // BININT
    return Op('\x8a').Byte(8).Le(static_cast<uint64_t>(v), 8);               // LONG1, 8 bytes
  }
  // LONG1 with raw little-endian two's complement bytes.
  PickleWriter& Long1(std::string_view le) { return Op('\x8a').Byte(static_cast<int>(le.size())).Raw(le); }
  PickleWriter& Float(double v) {
    uint64_t bits;
    static_assert(sizeof bits == sizeof v);
    __builtin_memcpy(&bits, &v, sizeof v);
    Op('G');
    for (int i = 7; i >= 0; --i) Byte(static_cast<int>((bits >> (8 * i)) & 0xff));  // BINFLOAT: big-endian
    return *this;
  }
  PickleWriter& Str(std::string_view s) { return Op('X').Le(s.size(), 4).Raw(s); }  // BINUNICODE
  PickleWriter& Global(std::string_view module, std::string_view name) {
    return Op('c').Raw(module).Raw("\n").Raw(name).Raw("\n");
  }
  PickleWriter& EmptyTuple() { return Op(')'); }
  PickleWriter& Tuple() { return Op('t'); }   // items since MARK
  PickleWriter& Tuple1() { return Op('\x85'); }
  PickleWriter& Tuple2() { return Op('\x86'); }
  PickleWriter& Tuple3() { return Op('\x87'); }
  PickleWriter& EmptyList() { return Op(']'); }
  PickleWriter& Append() { return Op('a'); }
  PickleWriter& Appends() { return Op('e'); }
  PickleWriter& EmptyDict() { return Op('}'); }
  PickleWriter& SetItem() { return Op('s'); }
  PickleWriter& SetItems() { return Op('u'); }
  PickleWriter& Reduce() { return Op('R'); }
  PickleWriter& NewObj() { return Op('\x81'); }
  PickleWriter& Build() { return Op('b'); }
  PickleWriter& BinPersId() { return Op('Q'); }
  PickleWriter& Put(int idx) { return Op('q').Byte(idx); }  // BINPUT
  PickleWriter& Get(int idx) { return Op('h').Byte(idx); }  // BINGET

  // Ints as a tuple: MARK ints TUPLE.
  PickleWriter& IntTuple(std::initializer_list<int64_t> values) {
    Mark();
    for (int64_t v : values) Int(v);
    return Tuple();
  }
  // ('storage', torch.<cls>, key, location, numel[, None]) BINPERSID.
  PickleWriter& StoragePid(std::string_view cls, std::string_view key, int64_t numel, bool legacy = false,
                           std::string_view location = "cpu") {
    // torch pickles the class by its __module__: torch.storage.UntypedStorage
    // (the only spelling weights_only allows), torch.FloatStorage.
    Mark().Str("storage").Global(cls == "UntypedStorage" ? "torch.storage" : "torch", cls).Str(key).Str(location).Int(numel);
    if (legacy) None();
    return Tuple().BinPersId();
  }
  // collections.OrderedDict() with nothing in it: backward hooks.
  PickleWriter& EmptyOrderedDict() { return Global("collections", "OrderedDict").EmptyTuple().Reduce(); }
  // _rebuild_tensor_v2(pid, offset, size, stride, requires_grad, hooks).
  PickleWriter& TensorV2(std::string_view cls, std::string_view key, int64_t numel, int64_t offset,
                         std::initializer_list<int64_t> size, std::initializer_list<int64_t> stride,
                         bool requires_grad = false, bool legacy = false) {
    Global("torch._utils", "_rebuild_tensor_v2").Mark().StoragePid(cls, key, numel, legacy);
    Int(offset).IntTuple(size).IntTuple(stride).Bool(requires_grad).EmptyOrderedDict();
    return Tuple().Reduce();
  }
  // _rebuild_tensor_v3(pid of an UntypedStorage of nbytes, offset, size,
  // stride, False, hooks, torch.<dtype>), as torch >= 2.1 writes new dtypes.
  PickleWriter& TensorV3(std::string_view key, int64_t nbytes, int64_t offset, std::initializer_list<int64_t> size,
                         std::initializer_list<int64_t> stride, std::string_view dtype) {
    Global("torch._utils", "_rebuild_tensor_v3").Mark().StoragePid("UntypedStorage", key, nbytes);
    Int(offset).IntTuple(size).IntTuple(stride).Bool(false).EmptyOrderedDict().Global("torch", dtype);
    return Tuple().Reduce();
  }

  const std::string& str() const { return out_; }
  std::vector<std::byte> bytes() const {
    std::vector<std::byte> b(out_.size());
    for (size_t i = 0; i < out_.size(); ++i) b[i] = std::byte(static_cast<unsigned char>(out_[i]));
    return b;
  }

 private:
  PickleWriter& Op(char op) {
    out_.push_back(op);
    return *this;
  }
  PickleWriter& Byte(int v) {
    out_.push_back(static_cast<char>(v & 0xff));
    return *this;
  }
  PickleWriter& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  PickleWriter& Raw(std::string_view s) {
    out_.append(s);
    return *this;
  }
  std::string out_;
};

}  // namespace zerofold::torch::testing

#endif  // ZEROFOLD_TESTS_TORCH_PICKLE_WRITER_H_
