#include "torch/tensor_recognizer.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace zerofold::torch {
namespace {

using pickle::NodeId;
using testing::GraphBuilder;

struct Expect {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape, stride;
  int64_t offset;
  uint32_t storage;
  bool requires_grad = false;
  bool is_parameter = false;
};

void CheckTensors(const Recognized& r, const std::vector<Expect>& expected) {
  REQUIRE_EQ(r.tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& t = r.tensors[i];
    const Expect& e = expected[i];
    CAPTURE(e.name);
    CHECK_EQ(t.name, e.name);
    CHECK_EQ(t.dtype, e.dtype);
    CHECK_EQ(t.shape, e.shape);
    CHECK_EQ(t.stride, e.stride);
    CHECK_EQ(t.storage_offset, e.offset);
    CHECK_EQ(t.storage, e.storage);
    CHECK_EQ(t.requires_grad, e.requires_grad);
    CHECK_EQ(t.is_parameter, e.is_parameter);
  }
}

TEST_CASE("a state dict: names, views of one storage, parameters, int keys") {
  GraphBuilder b;
  // {'model': OrderedDict(w=Parameter(view of 0), b=view of 0 at 6),
  //  'opt': {'state': {0: {'exp_avg': tensor on storage 1}}}, 'step': 3}
  NodeId w = b.Parameter(b.TensorV2(b.Pid("FloatStorage", "0", 10), 0, {2, 3}, {3, 1}, true));
  NodeId bias = b.TensorV2(b.Pid("FloatStorage", "0", 10), 6, {4}, {1});
  NodeId model = b.OrderedDict({{b.Str("w"), w}, {b.Str("b"), bias}});
  NodeId avg = b.TensorV2(b.Pid("HalfStorage", "1", 4), 0, {4}, {1});
  NodeId opt = b.Dict({{b.Str("state"), b.Dict({{b.Int(0), b.Dict({{b.Str("exp_avg"), avg}})}})}});
  NodeId root = b.Dict({{b.Str("model"), model}, {b.Str("opt"), opt}, {b.Str("step"), b.Int(3)}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  REQUIRE_EQ(r->storages.size(), 2u);
  CHECK_EQ(r->storages[0].key, "0");
  CHECK_EQ(r->storages[0].dtype, DType::kFloat32);
  CHECK_EQ(r->storages[0].nbytes, 40u);
  CHECK_EQ(r->storages[0].location, "cpu");
  CHECK_FALSE(r->storages[0].untyped);
  CHECK_EQ(r->storages[1].key, "1");
  CHECK_EQ(r->storages[1].dtype, DType::kFloat16);
  CHECK_EQ(r->storages[1].nbytes, 8u);
  CheckTensors(*r, {{"model.w", DType::kFloat32, {2, 3}, {3, 1}, 0, 0, true, true},
                    {"model.b", DType::kFloat32, {4}, {1}, 6, 0},
                    {"opt.state.0.exp_avg", DType::kFloat16, {4}, {1}, 0, 1}});
  // Patch points: the args tuple starts with the pid and the offset.
  const Tensor& t = r->tensors[1];
  CHECK_EQ(t.node, bias);
  CHECK_EQ(t.rebuild, bias);
  CHECK_EQ(b.g.Items(t.args)[0], t.pid);
  CHECK_EQ(b.g.AsInt(b.g.Items(t.args)[1]), 6);
  // The parameter's rebuild is the inner _rebuild_tensor_v2 call.
  CHECK_EQ(r->tensors[0].node, w);
  CHECK_EQ(r->tensors[0].rebuild, b.g.Items(b.g.Object(w).args)[0]);
  CHECK_EQ(r->storages[0].pid_node, b.g.Items(r->tensors[0].args)[0]);
  // Paths keep key kinds.
  const std::vector<PathElem>& p = r->tensors[2].path;
  REQUIRE_EQ(p.size(), 4u);
  CHECK_EQ(p[2].type, PathElem::Type::kIntKey);
  CHECK_EQ(p[2].num, 0);
  CHECK_EQ(p[3].type, PathElem::Type::kStrKey);
}

TEST_CASE("a node reached by two paths is two tensors on one node; cycles end") {
  GraphBuilder b;
  NodeId tied = b.Parameter(b.TensorV2(b.Pid("BFloat16Storage", "0", 12), 0, {3, 4}, {4, 1}));
  NodeId list = b.List({tied});
  b.g.Append(list, list);  // list contains itself
  NodeId root = b.Dict({{b.Str("wte"), tied}, {b.Str("lm_head"), tied}, {b.Str("loop"), list}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  CHECK_EQ(r->storages.size(), 1u);
  CheckTensors(*r, {{"wte", DType::kBFloat16, {3, 4}, {4, 1}, 0, 0, true, true},
                    {"lm_head", DType::kBFloat16, {3, 4}, {4, 1}, 0, 0, true, true},
                    {"loop.0", DType::kBFloat16, {3, 4}, {4, 1}, 0, 0, true, true}});
  CHECK_EQ(r->tensors[0].node, r->tensors[1].node);
  CHECK_EQ(r->tensors[0].args, r->tensors[1].args);
}

TEST_CASE("a tensor as the root, and an empty graph root") {
  GraphBuilder b;
  NodeId t = b.TensorV2(b.Pid("LongStorage", "0", 5), 0, {5}, {1});
  Result<Recognized> r = RecognizeTensors(b.g, t);
  REQUIRE(r.ok());
  CheckTensors(*r, {{"", DType::kInt64, {5}, {1}, 0, 0}});
  GraphBuilder none;
  Result<Recognized> empty = RecognizeTensors(none.g, none.None());
  REQUIRE(empty.ok());
  CHECK(empty->tensors.empty());
  CHECK(empty->storages.empty());
}

TEST_CASE("_rebuild_tensor_v3 on an untyped storage: float8 and uint16 views of one storage") {
  GraphBuilder b;
  // Written by torch >= 2.1: v3 args end with the dtype global; the pid's
  // class is UntypedStorage and its numel counts bytes.
  NodeId f8 = b.TensorV3(b.Pid("UntypedStorage", "0", 64), 0, {4, 8}, {8, 1}, "float8_e4m3fn");
  NodeId u16 = b.TensorV3(b.Pid("UntypedStorage", "0", 64), 16, {16}, {1}, "uint16");
  NodeId u64 = b.TensorV3(b.Pid("UntypedStorage", "1", 24), 0, {3}, {1}, "uint64");
  NodeId root = b.Dict({{b.Str("f8"), f8}, {b.Str("u16"), u16}, {b.Str("u64"), u64}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  REQUIRE_EQ(r->storages.size(), 2u);
  CHECK(r->storages[0].untyped);
  CHECK_EQ(r->storages[0].nbytes, 64u);
  CHECK_EQ(r->storages[0].dtype, DType::kFloat8E4M3FN);  // the first tensor's
  CHECK_EQ(r->storages[1].nbytes, 24u);
  CHECK_EQ(r->storages[1].dtype, DType::kUInt64);
  CheckTensors(*r, {{"f8", DType::kFloat8E4M3FN, {4, 8}, {8, 1}, 0, 0},
                    {"u16", DType::kUInt16, {16}, {1}, 16, 0},
                    {"u64", DType::kUInt64, {3}, {1}, 0, 1}});
}

TEST_CASE("parameter with state, tensor subclasses, quantized tensors, torch.Size") {
  GraphBuilder b;
  NodeId extra = b.TensorV2(b.Pid("FloatStorage", "1", 2), 0, {2}, {1});
  NodeId p = b.Reduce(b.Global("torch._utils", "_rebuild_parameter_with_state"),
                      b.Tuple({b.TensorV2(b.Pid("FloatStorage", "0", 6), 0, {6}, {1}), b.Bool(false), b.Hooks(),
                               b.Dict({{b.Str("extra"), extra}})}));
  // _rebuild_from_type_v2(_rebuild_tensor_v2, MyTensor, args, state)
  NodeId sub_args = b.Tuple({b.Pid("IntStorage", "2", 3), b.Int(1), b.Ints({2}), b.Ints({1}), b.Bool(true), b.Hooks()});
  NodeId sub = b.Reduce(b.Global("torch._tensor", "_rebuild_from_type_v2"),
                        b.Tuple({b.Global("torch._utils", "_rebuild_tensor_v2"), b.Global("my.mod", "MyTensor"),
                                 sub_args, b.Dict({})}));
  // _rebuild_qtensor(storage, offset, size, stride, (per_channel_affine, scales, zero_points, axis), rg, hooks)
  NodeId qpid = b.Pid("QInt8Storage", "3", 6);  // document order: the pid comes first
  NodeId scales = b.TensorV2(b.Pid("DoubleStorage", "4", 2), 0, {2}, {1});
  NodeId zps = b.TensorV2(b.Pid("LongStorage", "5", 2), 0, {2}, {1});
  NodeId qparams = b.Tuple({b.Global("torch", "per_channel_affine"), scales, zps, b.Int(0)});
  NodeId size = b.Reduce(b.Global("torch", "Size"), b.Tuple({b.Ints({2, 3})}));
  NodeId q = b.Reduce(b.Global("torch._utils", "_rebuild_qtensor"),
                      b.Tuple({qpid, b.Int(0), size, b.Ints({3, 1}), qparams, b.Bool(false),
                               b.Hooks()}));
  NodeId root = b.Dict({{b.Str("p"), p}, {b.Str("sub"), sub}, {b.Str("q"), q}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  CheckTensors(*r, {{"p", DType::kFloat32, {6}, {1}, 0, 1, false, true},
                    {"p.state.extra", DType::kFloat32, {2}, {1}, 0, 0},
                    {"sub", DType::kInt32, {2}, {1}, 1, 2, true, false},
                    {"q", DType::kQInt8, {2, 3}, {3, 1}, 0, 3},
                    {"q.args.4.1", DType::kFloat64, {2}, {1}, 0, 4},
                    {"q.args.4.2", DType::kInt64, {2}, {1}, 0, 5}});
  CHECK(r->tensors[3].quantized);
  CHECK_FALSE(r->tensors[0].quantized);
  CHECK_EQ(r->tensors[2].rebuild, sub);
  CHECK_EQ(r->tensors[2].args, sub_args);
  // Storages in order of first pid: "1" (extra) is built before "0".
  REQUIRE_EQ(r->storages.size(), 6u);
  CHECK_EQ(r->storages[0].key, "1");
  CHECK_EQ(r->storages[1].key, "0");
}

TEST_CASE("tensors inside symbolic objects are named through args, state and items") {
  GraphBuilder b;
  NodeId t0 = b.TensorV2(b.Pid("FloatStorage", "0", 1), 0, {}, {});
  NodeId t1 = b.TensorV2(b.Pid("FloatStorage", "1", 1), 0, {}, {});
  NodeId t2 = b.TensorV2(b.Pid("FloatStorage", "2", 1), 0, {}, {});
  NodeId t3 = b.TensorV2(b.Pid("FloatStorage", "3", 1), 0, {}, {});
  // argparse.Namespace: NEWOBJ + BUILD {'t': t0}
  pickle::ObjectData ns;
  ns.op = pickle::ObjectOp::kNewObj;
  ns.callable = b.Global("argparse", "Namespace");
  ns.args = b.Tuple({});
  ns.state = b.Dict({{b.Str("t"), t0}});
  NodeId ns_node = b.g.AddObject(ns);
  // some.Thing(t1) with appended t2 and set item 'k': t3
  NodeId thing = b.Reduce(b.Global("some", "Thing"), b.Tuple({t1}));
  b.g.MutableObject(thing).list_items.push_back(t2);
  b.g.MutableObject(thing).dict_items = {b.Str("k"), t3};
  NodeId root = b.Dict({{b.Str("args"), ns_node}, {b.Str("thing"), thing}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  CheckTensors(*r, {{"args.state.t", DType::kFloat32, {}, {}, 0, 0},
                    {"thing.args.0", DType::kFloat32, {}, {}, 0, 1},
                    {"thing.0", DType::kFloat32, {}, {}, 0, 2},
                    {"thing.k", DType::kFloat32, {}, {}, 0, 3}});
  CHECK_EQ(r->tensors[0].path[1].type, PathElem::Type::kAttr);
  CHECK_EQ(r->tensors[0].path[1].str, "state");
}

TEST_CASE("dict keys of other kinds are named by their Python repr") {
  GraphBuilder b;
  auto t = [&](const char* key) { return b.TensorV2(b.Pid("ByteStorage", key, 1), 0, {1}, {1}); };
  NodeId root = b.Dict({{b.None(), t("0")},
                        {b.Bool(true), t("1")},
                        {b.g.AddFloat(0.5), t("2")},
                        {b.g.AddFloat(100.0), t("3")},
                        {b.Tuple({b.Str("a"), b.Int(1)}), t("4")},
                        {b.Tuple({b.Int(7)}), t("5")},
                        {b.g.AddBigInt(std::string("\x00\x00\x00\x00\x00\x00\x00\x00\x01", 9)), t("6")},
                        {b.g.AddBigInt(std::string("\xff", 1)), t("7")},
                        {b.g.AddBytes("a'\x01"), t("8")},
                        {b.Int(-2), t("9")},
                        {b.Str(""), t("10")}});
  Result<Recognized> r = RecognizeTensors(b.g, root);
  REQUIRE(r.ok());
  std::vector<std::string> names;
  for (const Tensor& x : r->tensors) names.push_back(x.name);
  CHECK_EQ(names, std::vector<std::string>{"None", "True", "0.5", "100.0", "('a', 1)", "(7,)", "18446744073709551616",
                                           "-1", "b'a\\'\\x01'", "-2", ""});
}

TEST_CASE("JoinPath") {
  std::vector<PathElem> p = {{PathElem::Type::kStrKey, "a", 0},
                             {PathElem::Type::kIndex, "", 3},
                             {PathElem::Type::kAttr, "state", 0},
                             {PathElem::Type::kIntKey, "", -1}};
  CHECK_EQ(JoinPath(p), "a.3.state.-1");
  CHECK_EQ(JoinPath({}), "");
  std::vector<PathElem> empty_key = {{PathElem::Type::kStrKey, "", 0}, {PathElem::Type::kStrKey, "x", 0}};
  CHECK_EQ(JoinPath(empty_key), ".x");
}

TEST_CASE("storages declared twice must agree") {
  struct Case {
    const char* name;
    const char* cls1;
    int64_t n1;
    const char* cls2;
    int64_t n2;
    const char* message;  // nullptr: consistent
  };
  const Case cases[] = {
      {"same", "FloatStorage", 4, "FloatStorage", 4, nullptr},
      {"other numel", "FloatStorage", 4, "FloatStorage", 5,
       "storage '0' is declared as FloatStorage of 4 elements and as FloatStorage of 5 elements"},
      {"other class", "FloatStorage", 4, "IntStorage", 4,
       "storage '0' is declared as FloatStorage of 4 elements and as IntStorage of 4 elements"},
      {"untyped, same bytes", "UntypedStorage", 16, "FloatStorage", 4, nullptr},
      {"untyped, other bytes", "FloatStorage", 4, "UntypedStorage", 8,
       "storage '0' is declared as FloatStorage of 4 elements and as UntypedStorage of 8 bytes"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    GraphBuilder b;
    NodeId root = b.List({b.Pid(c.cls1, "0", c.n1), b.Pid(c.cls2, "0", c.n2)});
    Result<Recognized> r = RecognizeTensors(b.g, root);
    if (!c.message) {
      REQUIRE(r.ok());
      CHECK_EQ(r->storages.size(), 1u);
      CHECK(r->tensors.empty());
    } else {
      REQUIRE_FALSE(r.ok());
      CHECK_EQ(r.status().code(), Code::kCorrupt);
      CHECK_EQ(r.status().message(), c.message);
    }
  }
}

TEST_CASE("malformed rebuild calls are corrupt and name the tensor") {
  struct Case {
    const char* name;
    std::function<NodeId(GraphBuilder&)> make;  // the tensor node
    const char* message;
  };
  const std::vector<Case> cases = {
      {"v2 with 5 arguments",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"),
                         b.Tuple({b.Pid("FloatStorage", "0", 1), b.Int(0), b.Ints({1}), b.Ints({1}), b.Bool(false)}));
       },
       "_rebuild_tensor_v2 takes 6 or 7 arguments, got 5"},
      {"size is a str",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"),
                         b.Tuple({b.Pid("FloatStorage", "0", 1), b.Int(0), b.Str("x"), b.Ints({1}), b.Bool(false),
                                  b.Hooks()}));
       },
       "size is a str, not a tuple"},
      {"stride item is a float",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"),
                         b.Tuple({b.Pid("FloatStorage", "0", 1), b.Int(0), b.Ints({1}),
                                  b.Tuple({b.g.AddFloat(1.0)}), b.Bool(false), b.Hooks()}));
       },
       "stride[0] is a float, not an int"},
      {"offset beyond 64 bits",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"),
                         b.Tuple({b.Pid("FloatStorage", "0", 1), b.g.AddBigInt(std::string(9, '\x01')), b.Ints({1}),
                                  b.Ints({1}), b.Bool(false), b.Hooks()}));
       },
       "storage_offset does not fit in 64 bits"},
      {"v3 dtype unknown",
       [](GraphBuilder& b) {
         return b.TensorV3(b.Pid("UntypedStorage", "0", 4), 0, {4}, {1}, "float7");
       },
       "_rebuild_tensor_v3 dtype is torch.float7, not a torch dtype"},
      {"args not a tuple",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"), b.List({b.Pid("FloatStorage", "0", 1)}));
       },
       "rebuild call arguments are a list, not a tuple"},
      {"parameter of 2 arguments",
       [](GraphBuilder& b) {
         return b.Reduce(b.Global("torch._utils", "_rebuild_parameter"),
                         b.Tuple({b.TensorV2(b.Pid("FloatStorage", "0", 1), 0, {1}, {1}), b.Bool(true)}));
       },
       "_rebuild_parameter takes 3 arguments, got 2"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    GraphBuilder b;
    NodeId t = c.make(b);
    NodeId root = b.Dict({{b.Str("layer"), b.List({b.None(), t})}});
    Result<Recognized> r = RecognizeTensors(b.g, root);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), Code::kCorrupt);
    CHECK_EQ(r.status().message(), c.message);
    CHECK_EQ(r.status().record(), "layer.1");
  }
}

TEST_CASE("a malformed rebuild call not reachable from the root is still corrupt") {
  GraphBuilder b;
  b.Reduce(b.Global("torch._utils", "_rebuild_tensor"), b.Tuple({b.Pid("FloatStorage", "0", 1), b.Int(0)}));
  Result<Recognized> r = RecognizeTensors(b.g, b.Dict({}));
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().message(), "_rebuild_tensor takes 4 arguments, got 2");
  CHECK_EQ(r.status().record(), "");
}

TEST_CASE("rebuild calls without a storage pid stay symbolic") {
  GraphBuilder b;
  // A storage pickled by value (TypedStorage.__reduce__ -> _load_from_bytes).
  NodeId by_value = b.Reduce(b.Global("torch.storage", "_load_from_bytes"), b.Tuple({b.g.AddBytes("...")}));
  NodeId t = b.Reduce(b.Global("torch._utils", "_rebuild_tensor_v2"),
                      b.Tuple({by_value, b.Int(0), b.Ints({1}), b.Ints({1}), b.Bool(false), b.Hooks()}));
  NodeId fake = b.Reduce(b.Global("torch_utils", "_rebuild_tensor_v2"),
                         b.Tuple({b.Pid("FloatStorage", "0", 1), b.Int(0), b.Ints({1}), b.Ints({1})}));
  Result<Recognized> r = RecognizeTensors(b.g, b.List({t, fake}));
  REQUIRE(r.ok());
  CHECK(r->tensors.empty());
  CHECK_EQ(r->storages.size(), 1u);  // the pid still names a storage torch would load
}

TEST_CASE("storage persistent ids: what torch's loaders refuse") {
  struct Case {
    const char* name;
    Format format;
    std::function<NodeId(GraphBuilder&)> make;  // the pid tuple
    Code code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"not a tuple", Format::kTorchZip, [](GraphBuilder& b) { return b.Str("storage"); }, Code::kCorrupt,
       "persistent id is a str, not a tuple"},
      {"unknown tag", Format::kTorchZip,
       [](GraphBuilder& b) { return b.Tuple({b.Str("tensor"), b.Global("torch", "FloatStorage")}); }, Code::kCorrupt,
       "persistent id type is 'tensor', not 'storage'"},
      {"module pid in a zip archive", Format::kTorchZip,
       [](GraphBuilder& b) { return b.Tuple({b.Str("module"), b.Global("m", "C"), b.None(), b.None()}); },
       Code::kCorrupt, "persistent id type is 'module', not 'storage'"},
      {"six items in a zip archive", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.Str("0"), b.Str("cpu"), b.Int(1),
                         b.None()});
       },
       Code::kCorrupt, "storage persistent id has 6 items, not 5"},
      {"five items in a legacy file", Format::kTorchLegacy,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.Str("0"), b.Str("cpu"), b.Int(1)});
       },
       Code::kCorrupt, "storage persistent id has 5 items, not 6"},
      {"foreign class", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("evil", "FloatStorage"), b.Str("0"), b.Str("cpu"), b.Int(1)});
       },
       Code::kCorrupt, "storage class evil.FloatStorage is not a torch storage type"},
      {"unknown class", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "Float8Storage"), b.Str("0"), b.Str("cpu"), b.Int(1)});
       },
       Code::kCorrupt, "storage class torch.Float8Storage is not a torch storage type"},
      {"class not a global", Format::kTorchZip,
       [](GraphBuilder& b) { return b.Tuple({b.Str("storage"), b.Str("x"), b.Str("0"), b.Str("cpu"), b.Int(1)}); },
       Code::kCorrupt, "storage class is a str, not a global"},
      {"key is None", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.None(), b.Str("cpu"), b.Int(1)});
       },
       Code::kCorrupt, "storage key is a None, not a str"},
      {"location is an int", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.Str("0"), b.Int(0), b.Int(1)});
       },
       Code::kCorrupt, "storage '0' location is a int, not a str"},
      {"negative numel", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.Str("0"), b.Str("cpu"), b.Int(-1)});
       },
       Code::kCorrupt, "storage '0' numel is -1, not a count"},
      {"numel overflows bytes", Format::kTorchZip,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "DoubleStorage"), b.Str("0"), b.Str("cpu"),
                         b.Int(INT64_MAX / 4)});
       },
       Code::kCorrupt, "storage '0' of 2305843009213693951 8-byte elements overflows"},
      {"legacy view metadata", Format::kTorchLegacy,
       [](GraphBuilder& b) {
         return b.Tuple({b.Str("storage"), b.Global("torch", "FloatStorage"), b.Str("140"), b.Str("cpu"), b.Int(4),
                         b.Tuple({b.Str("141"), b.Int(0), b.Int(2)})});
       },
       Code::kUnsupported, "storage '140' is a view of another storage (view metadata, torch < 0.4)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    GraphBuilder b;
    NodeId pid = b.g.AddPersId(c.make(b));
    Result<std::optional<StoragePid>> p = ParseStoragePid(b.g, pid, c.format);
    REQUIRE_FALSE(p.ok());
    CHECK_EQ(p.status().code(), c.code);
    CHECK_EQ(p.status().message(), c.message);
    RecognizeOptions opts;
    opts.format = c.format;
    CHECK_EQ(RecognizeTensors(b.g, pid, opts).status().code(), c.code);
  }
}

TEST_CASE("storage pids that parse") {
  GraphBuilder b;
  NodeId legacy = b.Pid("cuda.HalfStorage", "94823", 7, /*legacy=*/true, "torch");
  // torch.cuda.HalfStorage in old files: module "torch.cuda".
  NodeId cuda = b.g.AddPersId(b.Tuple({b.Str("storage"), b.Global("torch.cuda", "HalfStorage"), b.Int(94824),
                                       b.g.AddBytes("cuda:0"), b.Int(3), b.None()}));
  NodeId module = b.g.AddPersId(b.Tuple({b.Str("module"), b.Global("m", "Net"), b.None(), b.None()}));
  CHECK_FALSE(ParseStoragePid(b.g, legacy, Format::kTorchLegacy).ok());  // "cuda.HalfStorage" is no class
  Result<std::optional<StoragePid>> p = ParseStoragePid(b.g, cuda, Format::kTorchLegacy);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK_EQ((*p)->key, "94824");
  CHECK_EQ((*p)->dtype, DType::kFloat16);
  CHECK_EQ((*p)->location, "cuda:0");
  CHECK_EQ((*p)->numel, 3u);
  CHECK_EQ((*p)->nbytes, 6u);
  Result<std::optional<StoragePid>> m = ParseStoragePid(b.g, module, Format::kTorchLegacy);
  REQUIRE(m.ok());
  CHECK_FALSE(m->has_value());
  NodeId untyped = b.Pid("UntypedStorage", "0", 10);
  Result<std::optional<StoragePid>> u = ParseStoragePid(b.g, untyped, Format::kTorchZip);
  REQUIRE(u.ok());
  CHECK((*u)->untyped);
  CHECK_FALSE((*u)->dtype.has_value());
  CHECK_EQ((*u)->nbytes, 10u);
}

// `r` failed on max_graph_visits == limit.
void CheckVisitLimit(const Result<Recognized>& r, uint64_t limit) {
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().message(),
           "naming tensors visits more than " + std::to_string(limit) + " graph nodes (--max-graph-visits)");
}

TEST_CASE("shared subgraphs: paths are counted against max_graph_visits") {
  // A chain of 40 lists each holding the next twice: 2^40 paths to one tensor.
  GraphBuilder b;
  NodeId node = b.TensorV2(b.Pid("FloatStorage", "0", 1), 0, {1}, {1});
  for (int i = 0; i < 40; ++i) node = b.List({node, node});
  RecognizeOptions opts;
  opts.max_graph_visits = 100000;
  CheckVisitLimit(RecognizeTensors(b.g, node, opts), 100000);
  // Ten levels: 1024 tensors, all one node.
  GraphBuilder small;
  NodeId n = small.TensorV2(small.Pid("FloatStorage", "0", 1), 0, {1}, {1});
  NodeId t = n;
  for (int i = 0; i < 10; ++i) n = small.List({n, n});
  Result<Recognized> ok = RecognizeTensors(small.g, n, opts);
  REQUIRE(ok.ok());
  REQUIRE_EQ(ok->tensors.size(), 1024u);
  CHECK_EQ(ok->tensors[0].name, "0.0.0.0.0.0.0.0.0.0");
  CHECK_EQ(ok->tensors[1023].name, "1.1.1.1.1.1.1.1.1.1");
  CHECK_EQ(ok->tensors[1023].node, t);
}

TEST_CASE("the default max_graph_visits refuses 2^40 paths to one tensor before their names fill memory") {
  // What torch.save writes for x = t; 40 times x = [x, x] (a 994-byte file):
  // torch loads it, sharing; naming every path would take terabytes.
  GraphBuilder b;
  NodeId node = b.TensorV2(b.Pid("FloatStorage", "0", 2), 0, {2}, {1});
  for (int i = 0; i < 40; ++i) node = b.List({node, node});
  CheckVisitLimit(RecognizeTensors(b.g, node), 4194304);
}

TEST_CASE("each named tensor's path steps count against max_graph_visits") {
  // 1000 paths of 101 steps to one tensor: about 1100 nodes visited, 101000
  // path steps kept.
  GraphBuilder b;
  NodeId t = b.TensorV2(b.Pid("FloatStorage", "0", 1), 0, {1}, {1});
  NodeId node = b.g.AddSequence(pickle::Kind::kList, std::vector<NodeId>(1000, t));
  for (int i = 0; i < 100; ++i) node = b.List({node});
  RecognizeOptions opts;
  opts.max_graph_visits = 100000;
  CheckVisitLimit(RecognizeTensors(b.g, node, opts), 100000);
  opts.max_graph_visits = 1101 + 101000;  // every node entered, every step kept
  Result<Recognized> ok = RecognizeTensors(b.g, node, opts);
  REQUIRE_MESSAGE(ok.ok(), ok.status().ToString());
  REQUIRE_EQ(ok->tensors.size(), 1000u);
  CHECK_EQ(ok->tensors[999].path.size(), 101u);
  opts.max_graph_visits = 1101 + 101000 - 1;
  CheckVisitLimit(RecognizeTensors(b.g, node, opts), 1101 + 101000 - 1);
}

TEST_CASE("deep paths stop at max_path_depth; deep graphs without tensors cost nothing") {
  GraphBuilder b;
  NodeId node = b.TensorV2(b.Pid("FloatStorage", "0", 1), 0, {1}, {1});
  for (int i = 0; i < 200000; ++i) node = b.List({node});
  RecognizeOptions opts;
  Result<Recognized> r = RecognizeTensors(b.g, node, opts);
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().message(), "a tensor path is deeper than 10000 steps (--max-path-depth)");
  opts.max_path_depth = 300000;
  Result<Recognized> deep = RecognizeTensors(b.g, node, opts);  // explicit stack: no recursion
  REQUIRE(deep.ok());
  REQUIRE_EQ(deep->tensors.size(), 1u);
  CHECK_EQ(deep->tensors[0].path.size(), 200000u);
  GraphBuilder plain;
  NodeId p = plain.None();
  for (int i = 0; i < 200000; ++i) p = plain.List({p, p});
  RecognizeOptions tight;
  tight.max_graph_visits = 10;
  Result<Recognized> none = RecognizeTensors(plain.g, p, tight);
  REQUIRE(none.ok());
  CHECK(none->tensors.empty());
}

}  // namespace
}  // namespace zerofold::torch
