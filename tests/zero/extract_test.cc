#include "zero/extract.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "../torch/graph_builder.h"
#include "fixture_cases.h"
#include "torch/checkpoint.h"
#include "torch/read.h"
#include "torch/tensor_recognizer.h"
#include "zero/files.h"
#include "zero/plan.h"
#include "zerofold/env.h"

namespace zerofold::zero {
namespace {

using namespace fixtures;  // Zero1Ws2Fp16(), ...
using pickle::NodeId;
using torch::DType;
using torch::testing::GraphBuilder;

torch::Checkpoint Recognize(const GraphBuilder& b, NodeId root) {
  Result<torch::Recognized> r = torch::RecognizeTensors(b.g, root);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  torch::Checkpoint c;
  c.graph = b.g;
  c.root = root;
  c.storages = r->storages;
  c.tensors = r->tensors;
  return c;
}

NodeId Size(GraphBuilder& b, std::initializer_list<int64_t> dims) {
  return b.Reduce(b.Global("torch", "Size"), b.Tuple({b.Ints(dims)}));
}

// A stage-2 model-states dict as DeepSpeed 0.14 pickles it, at world size 2:
// w and b views of flat buffer "0", head the same Parameter as w, emb frozen
// (its own storage, also the fragment), pos an int64 buffer, and a non-tensor
// module entry.
struct ModelStatesGraph {
  GraphBuilder b;
  NodeId root;
  NodeId shared_key = pickle::kNoNode;

  explicit ModelStatesGraph(bool with_shared_params = true) {
    NodeId w = b.Parameter(b.TensorV2(b.Pid("HalfStorage", "0", 10), 0, {2, 3}, {3, 1}, true));
    NodeId bias = b.Parameter(b.TensorV2(b.Pid("HalfStorage", "0", 10), 6, {4}, {1}, true));
    NodeId emb = b.Parameter(b.TensorV2(b.Pid("BFloat16Storage", "1", 3), 0, {3}, {1}), false);
    NodeId pos = b.TensorV2(b.Pid("LongStorage", "2", 5), 0, {1, 5}, {5, 1});
    NodeId module = b.OrderedDict({{b.Str("w"), w},
                                   {b.Str("b"), bias},
                                   {b.Str("emb"), emb},
                                   {b.Str("pos"), pos},
                                   {b.Str("_extra_state"), b.Int(7)},
                                   {b.Str("head"), w}});
    NodeId shapes = b.List({b.OrderedDict({{b.Str("w"), Size(b, {2, 3})}, {b.Str("b"), Size(b, {4})}})});
    std::vector<std::pair<NodeId, NodeId>> entries = {
        {b.Str("module"), module},
        {b.Str("buffer_names"), b.List({b.Str("pos")})},
        {b.Str("optimizer"), b.None()},
        {b.Str("param_shapes"), shapes},
        {b.Str("frozen_param_shapes"), b.OrderedDict({{b.Str("emb"), Size(b, {3})}})},
        {b.Str("frozen_param_fragments"), b.OrderedDict({{b.Str("emb"), emb}})},
        {b.Str("lr_scheduler"), b.None()},
        {b.Str("dp_world_size"), b.Int(2)},
        {b.Str("mp_world_size"), b.Int(1)},
        {b.Str("ds_version"), b.Str("0.14.5")},
    };
    if (with_shared_params) {
      shared_key = b.Str("shared_params");
      entries.insert(entries.begin() + 5, {shared_key, b.Dict({{b.Str("head"), b.Str("w")}})});
    }
    root = b.g.AddDict();
    for (auto [k, v] : entries) b.g.SetItem(root, k, v);
  }
};

ModelStates ExpectedModelStates() {
  ModelStates m;
  m.file = "ckpt/global_step2/mp_rank_00_model_states.pt";
  m.param_shapes = {{{"w", {2, 3}}, {"b", {4}}}};
  m.buffer_names = {"pos"};
  m.frozen_param_shapes = std::vector<NamedShape>{{"emb", {3}}};
  m.frozen_param_fragments = std::vector<NamedTensor>{{"emb", {DType::kBFloat16, {3}, {1}, "1", 0}}};
  m.shared_params = std::vector<SharedParam>{{"head", "w"}};
  m.module = {{"w", {DType::kFloat16, {2, 3}, {3, 1}, "0", 0}},
              {"b", {DType::kFloat16, {4}, {1}, "0", 6}},
              {"emb", {DType::kBFloat16, {3}, {1}, "1", 0}},
              {"pos", {DType::kInt64, {1, 5}, {5, 1}, "2", 0}},
              {"head", {DType::kFloat16, {2, 3}, {3, 1}, "0", 0}}};
  m.has_optimizer = false;
  m.dp_world_size = 2;
  m.ds_version = "0.14.5";
  return m;
}

TEST_CASE("model states: every key the planner needs, tensors by their views") {
  ModelStatesGraph g;
  Result<ModelStates> m = ExtractModelStates(Recognize(g.b, g.root), "ckpt/global_step2/mp_rank_00_model_states.pt");
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  ModelStates want = ExpectedModelStates();
  CHECK_EQ(m->module.size(), want.module.size());
  CHECK(m->module == want.module);
  CHECK(m->param_shapes == want.param_shapes);
  CHECK(m->frozen_param_fragments == want.frozen_param_fragments);
  CHECK(*m == want);

  // Without shared_params (older DeepSpeed) the field is unset, not empty.
  ModelStatesGraph old(false);
  m = ExtractModelStates(Recognize(old.b, old.root), want.file);
  REQUIRE(m.ok());
  CHECK_FALSE(m->shared_params.has_value());
}

// An optim-states dict with `zero_stage` as given.
struct OptimStatesGraph {
  GraphBuilder b;
  NodeId root;
  NodeId osd;

  explicit OptimStatesGraph(std::function<NodeId(GraphBuilder&)> zero_stage) {
    NodeId part = b.TensorV2(b.Pid("FloatStorage", "5", 8), 0, {5}, {1});
    NodeId avg = b.TensorV2(b.Pid("FloatStorage", "3", 5), 0, {5}, {1});
    pickle::ObjectData fa;
    fa.op = pickle::ObjectOp::kNewObj;
    fa.callable = b.Global("deepspeed.utils.tensor_fragment", "fragment_address");
    fa.args = b.Tuple({});
    fa.state = b.Dict({{b.Str("numel"), b.Int(5)}, {b.Str("start"), b.Int(0)}});
    NodeId address = b.g.AddObject(fa);
    osd = b.Dict({
        {b.Str("loss_scaler"), b.Reduce(b.Global("deepspeed.runtime.fp16.loss_scaler", "LossScaler"), b.Tuple({}))},
        {b.Str("base_optimizer_state"), b.Dict({{b.Str("state"), b.Dict({{b.Int(0), b.Dict({{b.Str("exp_avg"), avg}})}})}})},
        {b.Str("single_partition_of_fp32_groups"), b.List({part})},
        {b.Str("zero_stage"), zero_stage(b)},
        {b.Str("group_paddings"), b.List({b.Int(0)})},
        {b.Str("partition_count"), b.List({b.Int(2)})},
        {b.Str("ds_version"), b.Str("0.14.5")},
        {b.Str("param_slice_mappings"), b.List({b.OrderedDict({{b.Str("w"), address}})})},
    });
    root = b.Dict({{b.Str("optimizer_state_dict"), osd}, {b.Str("ds_version"), b.Str("0.14.5")}});
  }
};

NodeId ZeroStageEnum(GraphBuilder& b) { return b.Global("deepspeed.runtime.zero.config", "ZeroStageEnum"); }

TEST_CASE("optim states: zero_stage in each pickled form, partitions, paddings, slice mappings") {
  struct Form {
    const char* name;
    std::function<NodeId(GraphBuilder&)> make;
  } forms[] = {
      {"getattr(ZeroStageEnum, 'gradients'), Python >= 3.11",
       [](GraphBuilder& b) { return b.Reduce(b.Global("builtins", "getattr"), b.Tuple({ZeroStageEnum(b), b.Str("gradients")})); }},
      {"protocol 2 __builtin__.getattr",
       [](GraphBuilder& b) { return b.Reduce(b.Global("__builtin__", "getattr"), b.Tuple({ZeroStageEnum(b), b.Str("gradients")})); }},
      {"ZeroStageEnum(2), older Pythons", [](GraphBuilder& b) { return b.Reduce(ZeroStageEnum(b), b.Tuple({b.Int(2)})); }},
      {"the member as a global", [](GraphBuilder& b) { return b.Global("deepspeed.runtime.zero.config", "ZeroStageEnum.gradients"); }},
      {"a plain int", [](GraphBuilder& b) { return b.Int(2); }},
  };
  for (const Form& f : forms) {
    CAPTURE(f.name);
    OptimStatesGraph g(f.make);
    Result<OptimStates> o = ExtractOptimStates(Recognize(g.b, g.root), "zero_pp_rank_1_mp_rank_00_optim_states.pt", 1);
    REQUIRE_MESSAGE(o.ok(), o.status().ToString());
    OptimStates want;
    want.file = "zero_pp_rank_1_mp_rank_00_optim_states.pt";
    want.rank = 1;
    want.zero_stage = 2;
    want.partition_count = {2};
    want.partition_count_is_list = true;
    want.fp32_groups = {{DType::kFloat32, {5}, {1}, "5", 0}};
    want.group_paddings = std::vector<int64_t>{0};
    want.param_slice_mappings = std::vector<std::vector<SliceMapping>>{{{"w", 0, 5}}};
    CHECK(*o == want);
  }
  // The other members.
  for (const auto& [name, stage] : std::vector<std::pair<const char*, int64_t>>{
           {"disabled", 0}, {"optimizer_states", 1}, {"weights", 3}}) {
    const char* member = name;  // Clang 14 cannot capture a structured binding
    OptimStatesGraph g([member](GraphBuilder& b) {
      return b.Reduce(b.Global("builtins", "getattr"), b.Tuple({ZeroStageEnum(b), b.Str(member)}));
    });
    Result<OptimStates> o = ExtractOptimStates(Recognize(g.b, g.root), "f", 0);
    REQUIRE(o.ok());
    CHECK_EQ(o->zero_stage, stage);
  }
}

TEST_CASE("BF16_Optimizer and stage 3 optim states") {
  GraphBuilder b;
  NodeId p0 = b.TensorV2(b.Pid("FloatStorage", "6", 4), 0, {4}, {1});
  NodeId p1 = b.TensorV2(b.Pid("FloatStorage", "7", 2), 0, {2}, {1});
  NodeId osd = b.Dict({{b.Str("clip_grad"), b.g.AddFloat(1.0)},
                       {b.Str("single_partition_of_fp32_groups"), b.List({p0, p1})},
                       {b.Str("group_paddings"), b.List({b.Int(0), b.Int(1)})},
                       {b.Str("partition_count"), b.List({b.Int(3), b.Int(3)})},
                       {b.Str("param_slice_mappings"), b.None()}});
  NodeId root = b.Dict({{b.Str("optimizer_state_dict"), osd}});
  Result<OptimStates> o = ExtractOptimStates(Recognize(b, root), "bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt", 2);
  REQUIRE(o.ok());
  CHECK_FALSE(o->zero_stage.has_value());
  CHECK_EQ(o->partition_count, std::vector<int64_t>{3, 3});
  CHECK_EQ(o->fp32_groups.size(), 2u);
  CHECK_EQ(o->fp32_groups_key, Fp32GroupsKey::kSinglePartitionOfFp32Groups);
  CHECK_FALSE(o->param_slice_mappings.has_value());

  GraphBuilder b3;
  NodeId f0 = b3.TensorV2(b3.Pid("FloatStorage", "6", 4), 0, {4}, {1});
  NodeId osd3 = b3.Dict({{b3.Str("zero_stage"), b3.Reduce(b3.Global("builtins", "getattr"),
                                                           b3.Tuple({ZeroStageEnum(b3), b3.Str("weights")}))},
                         {b3.Str("partition_count"), b3.Int(4)},
                         {b3.Str("fp32_flat_groups"), b3.List({f0})}});
  NodeId root3 = b3.Dict({{b3.Str("optimizer_state_dict"), osd3}});
  o = ExtractOptimStates(Recognize(b3, root3), "zero_pp_rank_0_mp_rank_00_optim_states.pt", 0);
  REQUIRE(o.ok());
  CHECK_EQ(o->zero_stage, 3);
  CHECK_EQ(o->partition_count, std::vector<int64_t>{4});
  CHECK_FALSE(o->partition_count_is_list);
  CHECK_EQ(o->fp32_groups_key, Fp32GroupsKey::kFp32FlatGroups);
  CHECK_FALSE(o->group_paddings.has_value());
}

TEST_CASE("files that are not what they should be: kCorrupt naming the key") {
  struct Bad {
    const char* name;
    std::function<void(ModelStatesGraph&)> mutate;
    const char* record;
    const char* message;
  } bads[] = {
      {"no module", [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 0, g.b.Str("modulez")); }, "",
       "no 'module' key: not a DeepSpeed ZeRO checkpoint file"},
      {"buffer_names not a list", [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 3, g.b.Int(1)); },
       "buffer_names", "expected a list, found an int"},
      {"a buffer name not a str", [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 3, g.b.List({g.b.Int(1)})); },
       "buffer_names.0", "expected a str, found an int"},
      {"param_shapes a str", [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 7, g.b.Str("x")); },
       "param_shapes", "expected a list, found a str"},
      {"a shape of floats",
       [](ModelStatesGraph& g) {
         g.b.g.ReplaceItem(g.root, 9, g.b.OrderedDict({{g.b.Str("emb"), g.b.Tuple({g.b.g.AddFloat(1.5)})}}));
       },
       "frozen_param_shapes.emb.0", "expected an int, found a float"},
      {"a fragment that is no tensor",
       [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 13, g.b.OrderedDict({{g.b.Str("emb"), g.b.None()}})); },
       "frozen_param_fragments.emb", "expected a tensor, found None"},
      {"shared_params owner not a str",
       [](ModelStatesGraph& g) { g.b.g.ReplaceItem(g.root, 11, g.b.Dict({{g.b.Str("head"), g.b.Int(0)}})); },
       "shared_params.head", "expected a str, found an int"},
      // Shared containers: [d] * 3000 with 3000 entries in d is a 115 KB
      // pickle whose description would hold 9 million shapes.
      {"one param group twice",
       [](ModelStatesGraph& g) {
         NodeId group = g.b.OrderedDict({{g.b.Str("w"), g.b.Tuple({g.b.Int(6)})}});
         g.b.g.ReplaceItem(g.root, 7, g.b.List({group, group}));
       },
       "param_shapes.1", "a collections.OrderedDict object that was read before, at another key (a shared container)"},
      {"one shape for two params",
       [](ModelStatesGraph& g) {
         NodeId shape = g.b.Tuple({g.b.Int(3)});
         g.b.g.ReplaceItem(g.root, 9, g.b.OrderedDict({{g.b.Str("emb"), shape}, {g.b.Str("emb2"), shape}}));
       },
       "frozen_param_shapes.emb2", "a tuple that was read before, at another key (a shared container)"},
  };
  for (const Bad& bad : bads) {
    CAPTURE(bad.name);
    ModelStatesGraph g;
    bad.mutate(g);
    Status s = ExtractModelStates(Recognize(g.b, g.root), "m.pt").status();
    CHECK_EQ(s.code(), Code::kCorrupt);
    CHECK_EQ(s.path(), "m.pt");
    CHECK_EQ(s.record(), bad.record);
    CHECK_EQ(s.message(), bad.message);
  }

  OptimStatesGraph shared([](GraphBuilder& b) { return b.Int(2); });
  NodeId mapping = shared.b.OrderedDict({});
  shared.b.g.ReplaceItem(shared.osd, 15, shared.b.List({mapping, mapping}));
  Status twice = ExtractOptimStates(Recognize(shared.b, shared.root), "o.pt", 0).status();
  CHECK_EQ(twice.code(), Code::kCorrupt);
  CHECK_EQ(twice.record(), "optimizer_state_dict.param_slice_mappings.1");
  CHECK_EQ(twice.message(), "a collections.OrderedDict object that was read before, at another key (a shared container)");

  OptimStatesGraph g([](GraphBuilder& b) { return b.Str("two"); });
  Status s = ExtractOptimStates(Recognize(g.b, g.root), "o.pt", 0).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "optimizer_state_dict.zero_stage");
  CHECK_EQ(s.message(), "zero_stage is a str, not a ZeroStageEnum member or an int");

  OptimStatesGraph unknown([](GraphBuilder& b) {
    return b.Reduce(b.Global("builtins", "getattr"), b.Tuple({ZeroStageEnum(b), b.Str("everything")}));
  });
  s = ExtractOptimStates(Recognize(unknown.b, unknown.root), "o.pt", 0).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message(), "zero_stage is a builtins.getattr object, not a ZeroStageEnum member or an int");

  GraphBuilder b;
  NodeId root = b.Dict({{b.Str("optimizer_state_dict"), b.Dict({{b.Str("partition_count"), b.Int(2)}})}});
  s = ExtractOptimStates(Recognize(b, root), "o.pt", 0).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "optimizer_state_dict");
  CHECK_EQ(s.message(), "neither single_partition_of_fp32_groups nor fp32_flat_groups: no fp32 weights");

  GraphBuilder old;
  root = old.Dict({{old.Str("optimizer_state_dict"),
                    old.Dict({{old.Str("partition_count"), old.Int(2)},
                              {old.Str("local_sub_partitions_of_fp32_groups"), old.List({})}})}});
  s = ExtractOptimStates(Recognize(old, root), "o.pt", 0).status();
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.path(), "o.pt");
  CHECK_EQ(s.record(), "optimizer_state_dict.local_sub_partitions_of_fp32_groups");

  GraphBuilder list_root;
  s = ExtractOptimStates(Recognize(list_root, list_root.List({})), "o.pt", 0).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message(), "expected a dict, found a list");
}

TEST_CASE("extracted descriptions plan end to end") {
  ModelStatesGraph mg;
  ZeroCheckpoint c;
  Result<ModelStates> m = ExtractModelStates(Recognize(mg.b, mg.root), "mp_rank_00_model_states.pt");
  REQUIRE(m.ok());
  c.model_states.push_back(*m);
  for (uint32_t r = 0; r < 2; ++r) {
    // w (6) + b (4) = 10: two partitions of 5, the whole of w on rank 0.
    OptimStatesGraph og([](GraphBuilder& b) { return b.Int(2); });
    Result<OptimStates> o = ExtractOptimStates(Recognize(og.b, og.root), std::to_string(r) + ".pt", r);
    REQUIRE(o.ok());
    if (r == 1) (*o->param_slice_mappings)[0] = {{"w", 0, 1}};
    c.optim_states.push_back(*o);
  }
  // Rank 1's mapping lacks b: the cross-check catches it.
  Status s = PlanMerge(c).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "b");
  (*c.optim_states[1].param_slice_mappings)[0] = {{"w", 0, 1}, {"b", 1, 4}};
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
  REQUIRE_EQ(plan->tensors.size(), 4u);
  CHECK_EQ(plan->tensors[0].name, "w");
  CHECK_EQ(plan->tensors[2].name, "emb");
  CHECK_EQ(plan->tensors[2].kind, TensorKind::kFrozenParam);
  CHECK_EQ(plan->tensors[3].name, "pos");
  CHECK_EQ(plan->tensors[3].dtype, DType::kInt64);
  CHECK_EQ(plan->ties, std::vector<Tie>{{"head", "w"}});
}

// ------------------------------------------------ the real checkpoints --

// The descriptions describe.py extracted with Python's pickle (in
// fixture_cases.inc) must equal ours, read from the files with ReadCheckpoint.
TEST_CASE("the real DeepSpeed checkpoints: extraction equals describe.py's, and plans") {
  struct Case {
    const char* name;
    ZeroCheckpoint (*want)();
  } cases[] = {
      {"zero1_ws2_fp16", Zero1Ws2Fp16},
      {"zero2_ws3_bf16", Zero2Ws3Bf16},
      {"zero3_ws3_fp16", Zero3Ws3Fp16},
      {"zero3_ws4_fp32", Zero3Ws4Fp32},
      {"zero1_ws3_bf16_bf16optimizer", Zero1Ws3Bf16Bf16optimizer},
  };
  Env* env = Env::Default();
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string dir = std::string(ZF_SOURCE_ROOT) + "/fixtures/deepspeed/" + c.name + "/ckpt/global_step2";
    Result<std::vector<DirEntry>> listing = env->ListDir(dir);
    REQUIRE(listing.ok());
    std::vector<std::string> names;
    for (const DirEntry& e : *listing) names.push_back(e.name);
    Result<TagFiles> files = ClassifyTagFiles(names);
    REQUIRE_MESSAGE(files.ok(), files.status().ToString());

    auto read = [&](const std::string& name) {
      Result<std::unique_ptr<RandomSource>> src = env->OpenRandom(dir + "/" + name);
      REQUIRE(src.ok());
      Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(**src);
      REQUIRE_MESSAGE(ckpt.ok(), ckpt.status().ToString());
      CHECK(ckpt->unsafe_globals.empty());
      return std::move(ckpt).value();
    };
    ZeroCheckpoint got;
    std::vector<std::string> model_files = files->rank_model_states;
    if (model_files.empty()) model_files.push_back(files->model_states);
    for (const std::string& name : model_files) {
      Result<ModelStates> m = ExtractModelStates(read(name), name);
      REQUIRE_MESSAGE(m.ok(), m.status().ToString());
      got.model_states.push_back(std::move(m).value());
    }
    for (uint32_t r = 0; r < files->optim_states.size(); ++r) {
      Result<OptimStates> o = ExtractOptimStates(read(files->optim_states[r]), files->optim_states[r], r);
      REQUIRE_MESSAGE(o.ok(), o.status().ToString());
      got.optim_states.push_back(std::move(o).value());
    }
    ZeroCheckpoint want = c.want();
    REQUIRE_EQ(got.model_states.size(), want.model_states.size());
    REQUIRE_EQ(got.optim_states.size(), want.optim_states.size());
    for (size_t i = 0; i < want.model_states.size(); ++i) {
      const ModelStates& g = got.model_states[i];
      const ModelStates& w = want.model_states[i];
      CAPTURE(w.file);
      CHECK(g.module == w.module);
      CHECK(g.param_shapes == w.param_shapes);
      CHECK(g.frozen_param_shapes == w.frozen_param_shapes);
      CHECK(g.frozen_param_fragments == w.frozen_param_fragments);
      CHECK(g.shared_params == w.shared_params);
      CHECK(g.buffer_names == w.buffer_names);
      CHECK(g == w);
    }
    for (size_t r = 0; r < want.optim_states.size(); ++r) {
      const OptimStates& g = got.optim_states[r];
      const OptimStates& w = want.optim_states[r];
      CAPTURE(w.file);
      CHECK_EQ(g.zero_stage, w.zero_stage);
      CHECK(g.fp32_groups == w.fp32_groups);
      CHECK(g.param_slice_mappings == w.param_slice_mappings);
      CHECK(g == w);
    }
    CHECK(PlanMerge(got).ok());
  }
}

}  // namespace
}  // namespace zerofold::zero
