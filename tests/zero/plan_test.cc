#include "zero/plan.h"

#include <doctest/doctest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "fixture_cases.h"

namespace zerofold::zero {

// Printing for doctest's failure messages.
std::ostream& operator<<(std::ostream& os, const SourceSlice& s) {
  return os << (s.source == SourceKind::kOptimStates ? "optim[" : "model[") << s.file << "] storage " << s.storage
            << " @" << s.offset << " +" << s.count << " dtype#" << static_cast<int>(s.dtype);
}
std::ostream& operator<<(std::ostream& os, const Tie& t) { return os << t.name << " -> " << t.owner; }

namespace {

using torch::DType;

// ------------------------------------------------------------ builders --

// "p" + number. (GCC 12 warns falsely, -Wrestrict, on "literal" + std::string.)
std::string Key(char prefix, size_t i) {
  std::string key(1, prefix);
  key += std::to_string(i);
  return key;
}

TensorMeta T(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> stride, std::string storage,
             int64_t offset) {
  return TensorMeta{dtype, std::move(shape), std::move(stride), std::move(storage), offset};
}

// A flat 1-D tensor of n elements.
TensorMeta Flat(std::string storage, int64_t n, int64_t offset = 0, DType dtype = DType::kFloat32) {
  return T(dtype, {n}, {1}, std::move(storage), offset);
}

// A contiguous view of `shape` at `offset` in `storage`.
TensorMeta View(std::string storage, std::vector<int64_t> shape, int64_t offset = 0, DType dtype = DType::kFloat16) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  return T(dtype, std::move(shape), std::move(stride), std::move(storage), offset);
}

SourceSlice Optim(uint32_t rank, std::string storage, uint64_t offset, uint64_t count,
                  DType dtype = DType::kFloat32) {
  return SourceSlice{SourceKind::kOptimStates, rank, std::move(storage), offset, count, dtype};
}
SourceSlice Model(uint32_t file, std::string storage, uint64_t offset, uint64_t count,
                  DType dtype = DType::kFloat16) {
  return SourceSlice{SourceKind::kModelStates, file, std::move(storage), offset, count, dtype};
}

// Stage 1/2 (or BF16_Optimizer when stage is nullopt): one param group per
// entry of `groups`; lens[r][g] is rank r's saved partition length of group
// g. Partition g of every rank lives in storage "p<g>". `module` holds each
// param as a view of flat buffer "f<g>", in group order, then buffers.
ZeroCheckpoint Stage12(std::optional<int64_t> stage, std::vector<std::vector<NamedShape>> groups,
                       std::vector<std::vector<int64_t>> lens) {
  ZeroCheckpoint c;
  ModelStates m;
  m.file = "mp_rank_00_model_states.pt";
  m.param_shapes = groups;
  m.shared_params = std::vector<SharedParam>{};
  for (size_t g = 0; g < groups.size(); ++g) {
    int64_t off = 0;
    for (const NamedShape& p : groups[g]) {
      m.module.push_back({p.name, View(Key('f', g), p.shape, off)});
      int64_t n = 1;
      for (int64_t d : p.shape) n *= d;
      off += n;
    }
  }
  c.model_states.push_back(m);
  for (size_t r = 0; r < lens.size(); ++r) {
    OptimStates o;
    o.file = "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt";
    o.rank = static_cast<uint32_t>(r);
    o.zero_stage = stage;
    o.partition_count = std::vector<int64_t>(groups.size(), static_cast<int64_t>(lens.size()));
    o.partition_count_is_list = true;
    for (size_t g = 0; g < groups.size(); ++g) o.fp32_groups.push_back(Flat(Key('p', g), lens[r][g]));
    c.optim_states.push_back(o);
  }
  return c;
}

// Stage 3: lens[r][g] is rank r's fp32_flat_groups[g] length, storage
// "s<g>". `module` holds a zero-size placeholder per param (storage "ph<i>").
ZeroCheckpoint Stage3(std::vector<std::vector<NamedShape>> groups, std::vector<std::vector<int64_t>> lens) {
  ZeroCheckpoint c;
  for (size_t r = 0; r < lens.size(); ++r) {
    ModelStates m;
    m.file = "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_model_states.pt";
    m.param_shapes = groups;
    m.frozen_param_shapes = std::vector<NamedShape>{};
    m.frozen_param_fragments = std::vector<NamedTensor>{};
    m.shared_params = std::vector<SharedParam>{};
    int i = 0;
    for (const auto& group : groups) {
      for (const NamedShape& p : group) m.module.push_back({p.name, Flat("ph" + std::to_string(i++), 0, 0, DType::kFloat16)});
    }
    c.model_states.push_back(m);
    OptimStates o;
    o.file = "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt";
    o.rank = static_cast<uint32_t>(r);
    o.zero_stage = 3;
    o.partition_count = {static_cast<int64_t>(lens.size())};
    o.partition_count_is_list = false;
    o.fp32_groups_key = Fp32GroupsKey::kFp32FlatGroups;
    for (size_t g = 0; g < lens[r].size(); ++g) o.fp32_groups.push_back(Flat(Key('s', g), lens[r][g]));
    c.optim_states.push_back(o);
  }
  return c;
}

const OutputTensor* Find(const MergePlan& plan, const std::string& name) {
  for (const OutputTensor& t : plan.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> Names(const MergePlan& plan) {
  std::vector<std::string> out;
  for (const OutputTensor& t : plan.tensors) out.push_back(t.name);
  return out;
}

void CheckSlices(const MergePlan& plan, const std::string& name, const std::vector<SourceSlice>& want) {
  CAPTURE(name);
  const OutputTensor* t = Find(plan, name);
  REQUIRE(t != nullptr);
  CHECK_EQ(t->slices, want);
}

Status PlanStatus(const ZeroCheckpoint& c, const PlanOptions& options = {}) {
  return PlanMerge(c, options).status();
}

// ----------------------------------------------------------- stage 1/2 --

// A 9-element group at world size 4: DeepSpeed pads it to 16 (2 x 4 x 2),
// partitions of 4, and cuts the whole padding of 7 off the last rank with
// Python slice semantics: t[:4-7] keeps 1 element. Saved: 4/4/4/1.
ZeroCheckpoint NineAtFour(std::optional<int64_t> stage, std::vector<std::vector<int64_t>> lens) {
  return Stage12(stage, {{{"a", {5}}, {"b", {2, 2}}}}, std::move(lens));
}

TEST_CASE("stage 2: padding spread over several ranks, params from offset 0 across ranks") {
  ZeroCheckpoint c = NineAtFour(2, {{4}, {4}, {4}, {1}});
  c.optim_states[3].group_paddings = std::vector<int64_t>{7};  // recorded, and not used
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(plan->world_size, 4u);
  CHECK_EQ(plan->zero_stage, 2);
  CHECK_FALSE(plan->bf16_optimizer);
  CHECK_EQ(Names(*plan), std::vector<std::string>{"a", "b"});
  CheckSlices(*plan, "a", {Optim(0, "p0", 0, 4), Optim(1, "p0", 0, 1)});
  CheckSlices(*plan, "b", {Optim(1, "p0", 1, 3), Optim(2, "p0", 0, 1)});
  CHECK_EQ(Find(*plan, "b")->shape, std::vector<int64_t>{2, 2});
  CHECK_EQ(Find(*plan, "b")->dtype, DType::kFloat32);
  CHECK_EQ(Find(*plan, "b")->kind, TensorKind::kParam);
}

TEST_CASE("partition_count as an int (stage 3's form) or a list both give the world size") {
  ZeroCheckpoint c = NineAtFour(2, {{4}, {4}, {4}, {1}});
  for (OptimStates& o : c.optim_states) {
    o.partition_count = {4};
    o.partition_count_is_list = false;
  }
  CHECK(PlanMerge(c).ok());
  ZeroCheckpoint s3 = Stage3({{{"p", {5}}}}, {{3}, {3}});
  for (OptimStates& o : s3.optim_states) {
    o.partition_count = {2};
    o.partition_count_is_list = true;
  }
  CHECK(PlanMerge(s3).ok());
  s3.optim_states[1].partition_count = {3};
  CHECK_EQ(PlanStatus(s3).code(), Code::kNotFound);
}

TEST_CASE("stage 1: a partition's storage offset shifts its slices") {
  ZeroCheckpoint c = NineAtFour(1, {{4}, {4}, {4}, {1}});
  c.optim_states[1].fp32_groups[0] = Flat("big", 4, 100);
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(plan->zero_stage, 1);
  CheckSlices(*plan, "a", {Optim(0, "p0", 0, 4), Optim(1, "big", 100, 1)});
  CheckSlices(*plan, "b", {Optim(1, "big", 101, 3), Optim(2, "p0", 0, 1)});
}

TEST_CASE("BF16_Optimizer: no zero_stage key, every partition saved whole with its padding") {
  ZeroCheckpoint c = NineAtFour(std::nullopt, {{4}, {4}, {4}, {4}});
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK(plan->bf16_optimizer);
  CHECK_EQ(plan->zero_stage, 1);
  CheckSlices(*plan, "a", {Optim(0, "p0", 0, 4), Optim(1, "p0", 0, 1)});
  CheckSlices(*plan, "b", {Optim(1, "p0", 1, 3), Optim(2, "p0", 0, 1)});

  // The DeepSpeedZeroOptimizer's trimmed last partition is not a BF16_Optimizer one.
  Status s = PlanStatus(NineAtFour(std::nullopt, {{4}, {4}, {4}, {1}}));
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), "zero_pp_rank_3_mp_rank_00_optim_states.pt");
}

TEST_CASE("stage 1/2 length check: L >= sum numel, both round up to the same multiple of 2 x ws") {
  struct Case {
    const char* name;
    std::vector<std::vector<int64_t>> lens;
    bool ok;
  } cases[] = {
      {"4/4/4/1 = 13 -> 16", {{4}, {4}, {4}, {1}}, true},
      {"4/4/1/0 = 9 exactly", {{4}, {4}, {1}, {0}}, true},
      {"4/4/4/4 = 16", {{4}, {4}, {4}, {4}}, true},
      {"4/4/0/0 = 8 < 9", {{4}, {4}, {0}, {0}}, false},
      {"4/4/4/5 = 17 -> 24", {{4}, {4}, {4}, {5}}, false},
      {"8/8/8/8 = 32", {{8}, {8}, {8}, {8}}, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status s = PlanStatus(NineAtFour(2, c.lens));
    CHECK_EQ(s.ok(), c.ok);
    if (!c.ok) {
      CHECK_EQ(s.code(), Code::kCorrupt);
      CHECK_EQ(s.path(), "mp_rank_00_model_states.pt");
    }
  }
}

TEST_CASE("stage 1/2: several groups, each from offset 0 of its own partitions") {
  ZeroCheckpoint c = Stage12(2, {{{"w", {3, 2}}}, {{"x", {1}}, {"y", {2}}}}, {{4, 2}, {2, 2}});
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(Names(*plan), std::vector<std::string>{"w", "x", "y"});
  CheckSlices(*plan, "w", {Optim(0, "p0", 0, 4), Optim(1, "p0", 0, 2)});
  CheckSlices(*plan, "x", {Optim(0, "p1", 0, 1)});
  CheckSlices(*plan, "y", {Optim(0, "p1", 1, 1), Optim(1, "p1", 0, 1)});
}

TEST_CASE("param_slice_mappings cross-check every placement") {
  auto with_mappings = [](std::vector<std::vector<SliceMapping>> per_rank) {
    ZeroCheckpoint c = NineAtFour(2, {{4}, {4}, {4}, {1}});
    for (size_t r = 0; r < 4; ++r) c.optim_states[r].param_slice_mappings = std::vector<std::vector<SliceMapping>>{per_rank[r]};
    return c;
  };
  std::vector<std::vector<SliceMapping>> good = {{{"a", 0, 4}}, {{"a", 0, 1}, {"b", 1, 3}}, {{"b", 0, 1}}, {}};
  CHECK(PlanMerge(with_mappings(good)).ok());

  struct Bad {
    const char* name;
    std::function<void(std::vector<std::vector<SliceMapping>>&)> mutate;
    const char* path;
    const char* record;
  } bads[] = {
      {"start off by one", [](auto& m) { m[1][1].start = 2; }, "zero_pp_rank_1_mp_rank_00_optim_states.pt", "b"},
      {"numel off by one", [](auto& m) { m[0][0].numel = 3; }, "zero_pp_rank_0_mp_rank_00_optim_states.pt", "a"},
      {"a param missing", [](auto& m) { m[2].clear(); }, "zero_pp_rank_2_mp_rank_00_optim_states.pt", "b"},
      {"a param on the wrong rank", [](auto& m) { m[3].push_back({"b", 0, 1}); },
       "zero_pp_rank_3_mp_rank_00_optim_states.pt", "b"},
      {"listed twice", [](auto& m) { m[0].push_back({"a", 0, 4}); }, "zero_pp_rank_0_mp_rank_00_optim_states.pt",
       "a"},
  };
  for (const Bad& b : bads) {
    CAPTURE(b.name);
    std::vector<std::vector<SliceMapping>> m = good;
    b.mutate(m);
    Status s = PlanStatus(with_mappings(m));
    CHECK_EQ(s.code(), Code::kCorrupt);
    CHECK_EQ(s.path(), b.path);
    CHECK_EQ(s.record(), b.record);
  }
  // A zero-numel entry for a param the rank does not hold is harmless.
  std::vector<std::vector<SliceMapping>> m = good;
  m[3].push_back({"a", 0, 0});
  CHECK(PlanMerge(with_mappings(m)).ok());
}

// ------------------------------------------------------------- stage 3 --

TEST_CASE("stage 3: each param takes ceil(numel / ws) from every rank; a param may span sub-groups") {
  // ws 2: p (5) takes 3 per rank, q (4) 2, r (3) 2: 7 per rank, saved in
  // sub-groups of 4 and 3, so q straddles them on both ranks.
  ZeroCheckpoint c = Stage3({{{"p", {5}}, {"q", {2, 2}}}, {{"r", {3}}}}, {{4, 3}, {4, 3}});
  c.optim_states[1].fp32_groups[1] = Flat("s1", 3, 10);
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(plan->zero_stage, 3);
  CHECK_EQ(plan->world_size, 2u);
  CHECK_EQ(Names(*plan), std::vector<std::string>{"p", "q", "r"});
  CheckSlices(*plan, "p", {Optim(0, "s0", 0, 3), Optim(1, "s0", 0, 2)});
  CheckSlices(*plan, "q", {Optim(0, "s0", 3, 1), Optim(0, "s1", 0, 1), Optim(1, "s0", 3, 1), Optim(1, "s1", 10, 1)});
  CheckSlices(*plan, "r", {Optim(0, "s1", 1, 2), Optim(1, "s1", 11, 1)});
}

TEST_CASE("stage 3: a param smaller than the world size, empty params, one sub-group per param") {
  // ws 4: one (1) takes 1 per rank, only rank 0's is real; e (0) takes none;
  // six (6) takes 2 per rank: ranks 0-2 real, rank 3 padding.
  ZeroCheckpoint c = Stage3({{{"one", {1}}}, {{"e", {0, 3}}}, {{"six", {6}}}}, {{1, 0, 2}, {1, 0, 2}, {1, 0, 2}, {1, 0, 2}});
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CheckSlices(*plan, "one", {Optim(0, "s0", 0, 1)});
  CheckSlices(*plan, "e", {});
  CHECK_EQ(Find(*plan, "e")->shape, std::vector<int64_t>{0, 3});
  CheckSlices(*plan, "six", {Optim(0, "s2", 0, 2), Optim(1, "s2", 0, 2), Optim(2, "s2", 0, 2)});
}

TEST_CASE("stage 3: every rank holds exactly sum ceil(numel / ws)") {
  for (auto lens : std::vector<std::vector<std::vector<int64_t>>>{{{4, 3}, {4, 2}}, {{4, 3}, {4, 4}}, {{7}, {8}}}) {
    ZeroCheckpoint c = Stage3({{{"p", {5}}, {"q", {2, 2}}}, {{"r", {3}}}}, lens);
    Status s = PlanStatus(c);
    CHECK_EQ(s.code(), Code::kCorrupt);
    CHECK_EQ(s.path(), "zero_pp_rank_1_mp_rank_00_optim_states.pt");
  }
  CHECK(PlanMerge(Stage3({{{"p", {5}}, {"q", {2, 2}}}, {{"r", {3}}}}, {{7}, {7}})).ok());
}

// --------------------------------------------------------------- ties --

// Stage 2, ws 1, one group: w [2,3] at 0 and bias [3] at 6 of flat buffer
// f0; "head.w" is the same Parameter as w; "decoy" shares f0 and w's offset
// but not its shape.
ZeroCheckpoint TiedStage(std::optional<int64_t> stage) {
  ZeroCheckpoint c = Stage12(stage, {{{"w", {2, 3}}, {"bias", {3}}}}, {{10}});
  if (stage == std::nullopt) c.optim_states[0].fp32_groups[0] = Flat("p0", 10);
  std::vector<NamedTensor>& module = c.model_states[0].module;
  module.insert(module.begin(), {"head.w", View("f0", {2, 3})});
  return c;
}

TEST_CASE("ties from shared_params") {
  ZeroCheckpoint c = TiedStage(2);
  c.model_states[0].frozen_param_shapes = std::vector<NamedShape>{};
  c.model_states[0].frozen_param_fragments = std::vector<NamedTensor>{};
  c.model_states[0].shared_params = std::vector<SharedParam>{{"head.w", "w"}};
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(Names(*plan), std::vector<std::string>{"w", "bias"});
  CHECK_EQ(plan->ties, std::vector<Tie>{{"head.w", "w"}});

  // A shared_params owner that names nothing is an error; a tie to a tie is followed.
  c.model_states[0].shared_params = std::vector<SharedParam>{{"head.w", "nope"}};
  Status s = PlanStatus(c);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "head.w");
  c.model_states[0].shared_params = std::vector<SharedParam>{{"head.w", "w"}, {"head2.w", "head.w"}};
  plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(plan->ties, (std::vector<Tie>{{"head.w", "w"}, {"head2.w", "w"}}));
}

TEST_CASE("ties without shared_params: same storage, offset, shape and stride as a param") {
  for (std::optional<int64_t> stage : {std::optional<int64_t>(1), std::optional<int64_t>(2), std::optional<int64_t>()}) {
    CAPTURE(stage.value_or(-1));
    ZeroCheckpoint c = TiedStage(stage);
    ModelStates& m = c.model_states[0];
    m.shared_params.reset();
    if (stage == 2) {
      m.frozen_param_shapes = std::vector<NamedShape>{};
      m.frozen_param_fragments = std::vector<NamedTensor>{};
    }
    Result<MergePlan> plan = PlanMerge(c);
    REQUIRE(plan.ok());
    CHECK_EQ(plan->ties, std::vector<Tie>{{"head.w", "w"}});
    CHECK_EQ(Names(*plan), (std::vector<std::string>{"w", "bias"}));

    // Same storage and offset, other shape: no tie. Stage 1 and BF16 take it
    // as a frozen param from module; stage 2 lists frozen params, so it is an
    // unexplained name.
    m.module.push_back({"decoy", View("f0", {3, 2})});
    Status s = PlanStatus(c);
    if (stage == 2) {
      CHECK_EQ(s.code(), Code::kCorrupt);
      CHECK_EQ(s.record(), "decoy");
    } else {
      plan = PlanMerge(c);
      REQUIRE(plan.ok());
      CHECK_EQ(plan->ties, std::vector<Tie>{{"head.w", "w"}});
      REQUIRE(Find(*plan, "decoy") != nullptr);
      CHECK_EQ(Find(*plan, "decoy")->kind, TensorKind::kFrozenParam);
      CheckSlices(*plan, "decoy", {Model(0, "f0", 0, 6)});
    }
  }
}

TEST_CASE("ties without shared_params in stage 3: placeholders differ, a tied name is the same tensor") {
  ZeroCheckpoint c = Stage3({{{"wte", {4}}, {"b", {2}}}}, {{3}, {3}});
  for (ModelStates& m : c.model_states) {
    m.shared_params.reset();
    m.module.push_back({"lm_head", m.module[0].tensor});  // same storage "ph0"
    m.module.push_back({"other", Flat("ph9", 0, 0, DType::kFloat16)});
  }
  // "other" is a zero-size placeholder like the rest but is not tied: with
  // frozen_param_shapes recorded (empty), it is unexplained.
  Status s = PlanStatus(c);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "other");
  for (ModelStates& m : c.model_states) m.module.pop_back();
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(plan->ties, std::vector<Tie>{{"lm_head", "wte"}});
  CHECK_EQ(Names(*plan), (std::vector<std::string>{"wte", "b"}));
}

// ------------------------------------------------------ frozen params --

TEST_CASE("frozen params, stage 1 and BF16_Optimizer: module names left after params, buffers and ties") {
  for (std::optional<int64_t> stage : {std::optional<int64_t>(1), std::optional<int64_t>()}) {
    ZeroCheckpoint c = TiedStage(stage);
    ModelStates& m = c.model_states[0];
    m.shared_params.reset();
    m.module.push_back({"emb", View("e", {3, 4}, 8, DType::kBFloat16)});
    m.module.push_back({"steps", View("s", {2}, 0, DType::kInt64)});
    m.buffer_names = {"steps"};
    Result<MergePlan> plan = PlanMerge(c);
    REQUIRE(plan.ok());
    CHECK_EQ(Names(*plan), (std::vector<std::string>{"w", "bias", "emb", "steps"}));
    CHECK_EQ(plan->ties, std::vector<Tie>{{"head.w", "w"}});  // a tie, not a frozen param
    const OutputTensor* emb = Find(*plan, "emb");
    CHECK_EQ(emb->kind, TensorKind::kFrozenParam);
    CHECK_EQ(emb->dtype, DType::kFloat32);
    CHECK_EQ(emb->shape, std::vector<int64_t>{3, 4});
    CheckSlices(*plan, "emb", {Model(0, "e", 8, 12, DType::kBFloat16)});
    CHECK_EQ(Find(*plan, "steps")->kind, TensorKind::kBuffer);
    CHECK_EQ(Find(*plan, "steps")->dtype, DType::kInt64);

    PlanOptions exclude;
    exclude.exclude_frozen = true;
    plan = PlanMerge(c, exclude);
    REQUIRE(plan.ok());
    CHECK_EQ(Names(*plan), (std::vector<std::string>{"w", "bias", "steps"}));
  }
}

TEST_CASE("frozen params, stage 2: the recorded fragment, whole") {
  ZeroCheckpoint c = Stage12(2, {{{"w", {4}}}}, {{4}});
  ModelStates& m = c.model_states[0];
  m.module.insert(m.module.begin(), {"emb", View("e", {2, 3})});
  m.frozen_param_shapes = std::vector<NamedShape>{{"emb", {2, 3}}};
  m.frozen_param_fragments = std::vector<NamedTensor>{{"emb", View("e", {2, 3})}};
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(Names(*plan), (std::vector<std::string>{"emb", "w"}));
  CHECK_EQ(Find(*plan, "emb")->kind, TensorKind::kFrozenParam);
  CHECK_EQ(Find(*plan, "emb")->dtype, DType::kFloat32);
  CheckSlices(*plan, "emb", {Model(0, "e", 0, 6)});

  (*m.frozen_param_fragments)[0].tensor = View("e", {5});
  Status s = PlanStatus(c);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "emb");
}

TEST_CASE("frozen params, stage 3: the ranks' fragments concatenated and cut") {
  // ws 2, emb [5]: ceil(5/2) = 3 per rank, rank 1's last element is padding.
  ZeroCheckpoint c = Stage3({{{"w", {2}}}}, {{1}, {1}});
  for (uint32_t r = 0; r < 2; ++r) {
    ModelStates& m = c.model_states[r];
    m.module.push_back({"emb", Flat("ph_e", 0, 0, DType::kFloat16)});
    m.frozen_param_shapes = std::vector<NamedShape>{{"emb", {5}}};
    m.frozen_param_fragments = std::vector<NamedTensor>{{"emb", Flat("frag", 3, r == 1 ? 7 : 0, DType::kFloat16)}};
  }
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(Names(*plan), (std::vector<std::string>{"w", "emb"}));
  CheckSlices(*plan, "emb", {Model(0, "frag", 0, 3), Model(1, "frag", 7, 2)});
  CHECK_EQ(Find(*plan, "emb")->dtype, DType::kFloat32);

  // Too short fragments.
  ZeroCheckpoint short_frags = c;
  (*short_frags.model_states[1].frozen_param_fragments)[0].tensor = Flat("frag", 1, 0, DType::kFloat16);
  Status s = PlanStatus(short_frags);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), "emb");

  // Without fragments the values are gone: unsupported unless excluded.
  for (ModelStates& m : c.model_states) {
    m.frozen_param_shapes.reset();
    m.frozen_param_fragments.reset();
  }
  s = PlanStatus(c);
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.record(), "emb");
  PlanOptions exclude;
  exclude.exclude_frozen = true;
  plan = PlanMerge(c, exclude);
  REQUIRE(plan.ok());
  CHECK_EQ(Names(*plan), std::vector<std::string>{"w"});
}

// ------------------------------------------------------------- dtypes --

TEST_CASE("dtypes: float32 out for params, frozen and floating buffers; integers and float64 kept") {
  ZeroCheckpoint c = Stage12(2, {{{"w", {2}}}}, {{2}});
  ModelStates& m = c.model_states[0];
  m.frozen_param_shapes = std::vector<NamedShape>{};
  m.frozen_param_fragments = std::vector<NamedTensor>{};
  m.module.push_back({"h", View("h", {2}, 0, DType::kFloat16)});
  m.module.push_back({"d", View("d", {2}, 0, DType::kFloat64)});
  m.module.push_back({"i", View("i", {2}, 0, DType::kInt32)});
  m.module.push_back({"flag", View("flag", {1}, 0, DType::kBool)});
  m.buffer_names = {"h", "d", "i", "flag"};
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CHECK_EQ(Find(*plan, "w")->dtype, DType::kFloat32);
  CHECK_EQ(Find(*plan, "h")->dtype, DType::kFloat32);
  CHECK_EQ(Find(*plan, "d")->dtype, DType::kFloat64);
  CHECK_EQ(Find(*plan, "i")->dtype, DType::kInt32);
  CHECK_EQ(Find(*plan, "flag")->dtype, DType::kBool);
  CheckSlices(*plan, "h", {Model(0, "h", 0, 2, DType::kFloat16)});

  PlanOptions bf16;
  bf16.float_dtype = DType::kBFloat16;
  plan = PlanMerge(c, bf16);
  REQUIRE(plan.ok());
  CHECK_EQ(Find(*plan, "w")->dtype, DType::kBFloat16);
  CHECK_EQ(Find(*plan, "h")->dtype, DType::kBFloat16);
  CHECK_EQ(Find(*plan, "d")->dtype, DType::kBFloat16);
  CHECK_EQ(Find(*plan, "i")->dtype, DType::kInt32);

  PlanOptions bad;
  bad.float_dtype = DType::kInt8;
  CHECK_EQ(PlanStatus(c, bad).code(), Code::kInvalidArgument);
}

TEST_CASE("a non-contiguous buffer is refused; size-1 dims may have any stride") {
  ZeroCheckpoint c = Stage12(2, {{{"w", {2}}}}, {{2}});
  ModelStates& m = c.model_states[0];
  m.frozen_param_shapes = std::vector<NamedShape>{};
  m.frozen_param_fragments = std::vector<NamedTensor>{};
  m.module.push_back({"pos", T(DType::kInt64, {1, 5}, {0, 1}, "pos", 3)});  // arange(5).expand(1, -1)
  m.buffer_names = {"pos"};
  Result<MergePlan> plan = PlanMerge(c);
  REQUIRE(plan.ok());
  CheckSlices(*plan, "pos", {Model(0, "pos", 3, 5, DType::kInt64)});

  m.module.back().tensor = T(DType::kInt64, {2, 3}, {1, 2}, "pos", 0);  // a transpose
  Status s = PlanStatus(c);
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.record(), "pos");
}

// ------------------------------------------------- layouts and errors --

TEST_CASE("refused layouts and inconsistent rank files, with the code, file and tensor") {
  struct Bad {
    const char* name;
    std::function<void(ZeroCheckpoint&)> mutate;
    Code code;
    const char* path;
    const char* record;
  } bads[] = {
      {"ZeRO-0 fp16: masters in the model states not linked to params",
       [](ZeroCheckpoint& c) {
         c.optim_states.clear();
         c.model_states[0].has_optimizer = true;
         c.model_states[0].optimizer_kind = Zero0Optimizer::kFp16Unfused;
         c.model_states[0].optimizer_fp32_groups = {{TensorMeta{DType::kFloat32, {8}, {1}, "9", 0}}};
       },
       Code::kUnsupported, "mp_rank_00_model_states.pt", ""},
      {"no optim states at all", [](ZeroCheckpoint& c) { c.optim_states.clear(); }, Code::kNotFound, "", ""},
      {"zero_stage 0", [](ZeroCheckpoint& c) { for (auto& o : c.optim_states) o.zero_stage = 0; },
       Code::kUnsupported, "zero_pp_rank_0_mp_rank_00_optim_states.pt", ""},
      {"zero_stage 5", [](ZeroCheckpoint& c) { for (auto& o : c.optim_states) o.zero_stage = 5; }, Code::kCorrupt,
       "zero_pp_rank_0_mp_rank_00_optim_states.pt", ""},
      {"ranks disagree on the stage", [](ZeroCheckpoint& c) { c.optim_states[2].zero_stage = 1; }, Code::kCorrupt,
       "zero_pp_rank_2_mp_rank_00_optim_states.pt", ""},
      {"one rank without zero_stage", [](ZeroCheckpoint& c) { c.optim_states[1].zero_stage.reset(); },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"MoE: groups over different world sizes",
       [](ZeroCheckpoint& c) { c.optim_states[0].partition_count = {4, 2}; }, Code::kUnsupported,
       "zero_pp_rank_0_mp_rank_00_optim_states.pt", ""},
      {"a rank file missing", [](ZeroCheckpoint& c) { c.optim_states.pop_back(); }, Code::kNotFound,
       "zero_pp_rank_0_mp_rank_00_optim_states.pt", ""},
      {"an extra rank file",
       [](ZeroCheckpoint& c) { for (auto& o : c.optim_states) o.partition_count = {3, 3}; }, Code::kCorrupt,
       "zero_pp_rank_0_mp_rank_00_optim_states.pt", ""},
      {"rank files out of order", [](ZeroCheckpoint& c) { std::swap(c.optim_states[0], c.optim_states[1]); },
       Code::kInvalidArgument, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"stage 2 file with fp32_flat_groups",
       [](ZeroCheckpoint& c) { c.optim_states[1].fp32_groups_key = Fp32GroupsKey::kFp32FlatGroups; },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"partition_count a list of 3 for 2 groups", [](ZeroCheckpoint& c) { c.optim_states[3].partition_count = {4, 4, 4}; },
       Code::kCorrupt, "zero_pp_rank_3_mp_rank_00_optim_states.pt", ""},
      {"fewer partitions than groups", [](ZeroCheckpoint& c) { c.optim_states[1].fp32_groups.pop_back(); },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"a 2-D partition", [](ZeroCheckpoint& c) { c.optim_states[1].fp32_groups[0] = View("p0", {2, 2}, 0, DType::kFloat32); },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"an integer partition", [](ZeroCheckpoint& c) { c.optim_states[1].fp32_groups[0].dtype = DType::kInt32; },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"a negative storage offset", [](ZeroCheckpoint& c) { c.optim_states[1].fp32_groups[0].storage_offset = -1; },
       Code::kCorrupt, "zero_pp_rank_1_mp_rank_00_optim_states.pt", ""},
      {"dp_world_size disagrees", [](ZeroCheckpoint& c) { c.model_states[0].dp_world_size = 8; }, Code::kCorrupt,
       "mp_rank_00_model_states.pt", ""},
      {"no model states", [](ZeroCheckpoint& c) { c.model_states.clear(); }, Code::kNotFound, "", ""},
      {"a negative shape", [](ZeroCheckpoint& c) { c.model_states[0].param_shapes[1][0].shape = {-1}; },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "x"},
      {"an overflowing shape",
       [](ZeroCheckpoint& c) { c.model_states[0].param_shapes[1][0].shape = {1ll << 40, 1ll << 40}; },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "x"},
      {"a param twice", [](ZeroCheckpoint& c) { c.model_states[0].param_shapes[1][1].name.assign(1, 'x'); },
       Code::kCorrupt,
       "mp_rank_00_model_states.pt", "x"},
      {"a buffer missing from module", [](ZeroCheckpoint& c) { c.model_states[0].buffer_names = {"gone"}; },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "gone"},
      {"a buffer that is a param", [](ZeroCheckpoint& c) { c.model_states[0].buffer_names = {"w"}; },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "w"},
      {"a module name twice", [](ZeroCheckpoint& c) { c.model_states[0].module.push_back(c.model_states[0].module[0]); },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "w"},
      {"shared_params ties a param", [](ZeroCheckpoint& c) { c.model_states[0].shared_params = std::vector<SharedParam>{{"x", "w"}}; },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "x"},
      {"frozen_param_shapes names a param",
       [](ZeroCheckpoint& c) {
         c.model_states[0].frozen_param_shapes = std::vector<NamedShape>{{"w", {8}}};
         c.model_states[0].frozen_param_fragments = std::vector<NamedTensor>{};
       },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "w"},
      {"a frozen param without a fragment",
       [](ZeroCheckpoint& c) {
         c.model_states[0].frozen_param_shapes = std::vector<NamedShape>{{"emb", {8}}};
         c.model_states[0].frozen_param_fragments = std::vector<NamedTensor>{};
       },
       Code::kCorrupt, "mp_rank_00_model_states.pt", "emb"},
  };
  for (const Bad& b : bads) {
    CAPTURE(b.name);
    // ws 4, stage 2: group 0 holds w [8], group 1 x [1] and y [2].
    ZeroCheckpoint c = Stage12(2, {{{"w", {8}}}, {{"x", {1}}, {"y", {2}}}}, {{2, 1}, {2, 1}, {2, 1}, {2, 0}});
    REQUIRE(PlanMerge(c).ok());
    b.mutate(c);
    Status s = PlanStatus(c);
    CHECK_EQ(s.code(), b.code);
    CHECK_EQ(s.path(), b.path);
    CHECK_EQ(s.record(), b.record);
  }
}

TEST_CASE("stage 3 needs one model-states file per rank, all recording the same shapes") {
  ZeroCheckpoint c = Stage3({{{"p", {5}}}}, {{3}, {3}});
  ZeroCheckpoint missing = c;
  missing.model_states.pop_back();
  CHECK_EQ(PlanStatus(missing).code(), Code::kNotFound);
  ZeroCheckpoint extra = c;
  extra.model_states.push_back(c.model_states[0]);
  CHECK_EQ(PlanStatus(extra).code(), Code::kCorrupt);
  ZeroCheckpoint other = c;
  other.model_states[1].param_shapes[0][0].shape = {6};
  Status s = PlanStatus(other);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), "zero_pp_rank_1_mp_rank_00_model_states.pt");
}

TEST_CASE("error messages carry the numbers") {
  Status s = PlanStatus(NineAtFour(2, {{4}, {4}, {4}, {5}}));
  CHECK_EQ(s.message(),
           "param group 0: the 4 ranks' partitions hold 17 elements laid end to end (4+4+4+5), the recorded shapes "
           "need 9 (2 params); both must round up to the same multiple of 8 (2 x world size 4): 24 vs 16");

  ZeroCheckpoint c = NineAtFour(2, {{4}, {4}, {4}, {1}});
  c.optim_states.pop_back();
  c.optim_states.pop_back();
  s = PlanStatus(c);
  CHECK_EQ(s.message(), "partition_count says 4 ranks, found optim states of 2 (ranks 0-1): missing ranks 2-3");

  c = NineAtFour(2, {{4}, {4}, {4}, {1}});
  for (auto& o : c.optim_states) o.partition_count = {3};
  CHECK_EQ(PlanStatus(c).message(),
           "partition_count says 3 ranks, found optim states of 4 (ranks 0-3): rank 3 and up are not part of this "
           "checkpoint");

  c = Stage3({{{"p", {5}}, {"q", {2, 2}}}, {{"r", {3}}}}, {{4, 3}, {4, 2}});
  CHECK_EQ(PlanStatus(c).message(),
           "rank 1's fp32_flat_groups hold 6 elements in 2 sub-groups, the recorded shapes need 7 per rank (sum of "
           "ceil(numel / 2) over 3 params)");

  ZeroCheckpoint m = NineAtFour(2, {{4}, {4}, {4}, {1}});
  m.optim_states[1].param_slice_mappings = std::vector<std::vector<SliceMapping>>{{{"a", 0, 1}, {"b", 2, 3}}};
  CHECK_EQ(PlanStatus(m).message(),
           "param_slice_mappings[0] of rank 1 place b at 2 (+3), the recorded shapes at 1 (+3)");
}

// --------------------------------------------------- real checkpoints --

using fixtures::ExpectedPlan;
using fixtures::ExpectedTensor;
using namespace fixtures;  // the cases: Zero1Ws2Fp16(), kZero1Ws2Fp16Plan, ...

void CheckPlan(const MergePlan& plan, const ExpectedPlan& want) {
  CHECK_EQ(plan.world_size, want.world_size);
  CHECK_EQ(plan.zero_stage, want.zero_stage);
  CHECK_EQ(plan.bf16_optimizer, want.bf16_optimizer);
  REQUIRE_EQ(plan.tensors.size(), want.tensors.size());
  for (size_t i = 0; i < want.tensors.size(); ++i) {
    const OutputTensor& got = plan.tensors[i];
    const ExpectedTensor& w = want.tensors[i];
    CAPTURE(w.name);
    CHECK_EQ(got.name, w.name);
    CHECK_EQ(got.kind, w.kind);
    CHECK_EQ(got.dtype, w.dtype);
    CHECK_EQ(got.shape, w.shape);
    CHECK_EQ(got.slices, w.slices);
  }
  CHECK_EQ(plan.ties, want.ties);
}

TEST_CASE("the real DeepSpeed checkpoints plan to the slices that rebuild ground_truth.pt") {
  struct Case {
    const char* name;
    ZeroCheckpoint (*make)();
    const ExpectedPlan* want;
  } cases[] = {
      {"zero1_ws2_fp16", Zero1Ws2Fp16, &kZero1Ws2Fp16Plan},
      {"zero2_ws3_bf16", Zero2Ws3Bf16, &kZero2Ws3Bf16Plan},
      {"zero3_ws3_fp16", Zero3Ws3Fp16, &kZero3Ws3Fp16Plan},
      {"zero3_ws4_fp32", Zero3Ws4Fp32, &kZero3Ws4Fp32Plan},
      {"zero1_ws3_bf16_bf16optimizer", Zero1Ws3Bf16Bf16optimizer, &kZero1Ws3Bf16Bf16optimizerPlan},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Result<MergePlan> plan = PlanMerge(c.make());
    REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
    CheckPlan(*plan, *c.want);

    // Without shared_params (older DeepSpeed) the tie is found by its view.
    ZeroCheckpoint no_shared = c.make();
    for (ModelStates& m : no_shared.model_states) m.shared_params.reset();
    plan = PlanMerge(no_shared);
    REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
    CheckPlan(*plan, *c.want);
  }
}

TEST_CASE("key numbers of the real checkpoints") {
  // zero1_ws2_fp16: group 1 (8322 elements) padded to 8324 = 2 x 4162; the
  // last rank saved 4162 - 2 = 4160. transformer.wte.weight (7308) spans both.
  Result<MergePlan> plan = PlanMerge(Zero1Ws2Fp16());
  REQUIRE(plan.ok());
  CheckSlices(*plan, "transformer.wte.weight", {Optim(0, "7", 0, 4162), Optim(1, "7", 0, 3146)});
  CheckSlices(*plan, "transformer.wpe.weight", {Model(0, "3", 0, 612)});  // frozen, from module
  CHECK_EQ(plan->ties, std::vector<Tie>{{"lm_head.weight", "transformer.wte.weight"}});

  // zero3_ws4_fp32: mlp.c_fc.bias (147) takes ceil(147/4) = 37 per rank, the
  // last rank's 36 real.
  plan = PlanMerge(Zero3Ws4Fp32());
  REQUIRE(plan.ok());
  const OutputTensor* bias = Find(*plan, "transformer.h.0.mlp.c_fc.bias");
  REQUIRE(bias != nullptr);
  REQUIRE_EQ(bias->slices.size(), 4u);
  CHECK_EQ(bias->slices[0].count, 37u);
  CHECK_EQ(bias->slices[3].count, 36u);
  CHECK_EQ(bias->slices[0].offset, bias->slices[3].offset);
  const OutputTensor* wpe = Find(*plan, "transformer.wpe.weight");  // 612 = 4 x 153
  REQUIRE(wpe != nullptr);
  CHECK_EQ(wpe->kind, TensorKind::kFrozenParam);
  CHECK_EQ(wpe->slices.size(), 4u);
  CHECK_EQ(Find(*plan, "transformer.position_ids")->dtype, DType::kInt64);
}

}  // namespace
}  // namespace zerofold::zero
