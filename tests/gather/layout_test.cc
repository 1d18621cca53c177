#include "gather/layout.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../zero/fixture_cases.h"
#include "zero/gather_plan.h"

namespace zerofold::gather {
namespace {

using zero::LayOutMerge;

struct Fixture {
  zero::ZeroCheckpoint ckpt = zero::fixtures::Zero2Ws3Bf16();
  zero::MergePlan plan;
  Fixture() {
    Result<zero::MergePlan> p = zero::PlanMerge(ckpt);
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    plan = std::move(p).value();
  }
  size_t TensorIndex(const std::string& name) const {
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      if (plan.tensors[i].name == name) return i;
    FAIL("no tensor " << name);
    return 0;
  }
};

std::vector<std::string> Names(const MergeLayout& l) {
  std::vector<std::string> out;
  for (const OutputEntry& e : l.entries) out.push_back(e.name);
  return out;
}

TEST_CASE("LayOutMerge: module order, the tie after its owner and sharing it") {
  Fixture f;
  Result<MergeLayout> l = zero::LayOutMerge(f.plan, f.ckpt, {});
  REQUIRE(l.ok());
  std::vector<std::string> module;
  for (const zero::NamedTensor& m : f.ckpt.model_states[0].module) module.push_back(m.name);
  CHECK_EQ(Names(*l), module);  // every module name, in its order
  REQUIRE_EQ(l->entries.size(), 31u);
  const OutputEntry& head = l->entries.back();
  CHECK_EQ(head.name, "lm_head.weight");
  CHECK(head.tie);
  CHECK_EQ(l->entries[head.owner].name, "transformer.wte.weight");
  CHECK_EQ(head.tensor, f.TensorIndex("transformer.wte.weight"));
  for (size_t i = 0; i + 1 < l->entries.size(); ++i) {
    CAPTURE(l->entries[i].name);
    CHECK_FALSE(l->entries[i].tie);
    CHECK_EQ(l->entries[i].owner, i);
    CHECK_EQ(f.plan.tensors[l->entries[i].tensor].name, l->entries[i].name);
  }
}

TEST_CASE("LayOutMerge --only: ties follow their owner; a tie selected alone holds the data") {
  Fixture f;
  std::vector<std::string> owner = {"transformer.wte.*"};
  Result<MergeLayout> l = zero::LayOutMerge(f.plan, f.ckpt, owner);
  REQUIRE(l.ok());
  CHECK_EQ(Names(*l), std::vector<std::string>{"transformer.wte.weight", "lm_head.weight"});
  CHECK(l->entries[1].tie);
  CHECK_EQ(l->entries[1].owner, 0u);

  std::vector<std::string> tie_only = {"lm_head.*"};
  l = zero::LayOutMerge(f.plan, f.ckpt, tie_only);
  REQUIRE(l.ok());
  REQUIRE_EQ(Names(*l), std::vector<std::string>{"lm_head.weight"});
  CHECK_FALSE(l->entries[0].tie);
  CHECK_EQ(l->entries[0].tensor, f.TensorIndex("transformer.wte.weight"));

  std::vector<std::string> two = {"*.ln_f.*", "transformer.position_ids"};
  l = zero::LayOutMerge(f.plan, f.ckpt, two);
  REQUIRE(l.ok());
  CHECK_EQ(Names(*l),
           std::vector<std::string>{"transformer.position_ids", "transformer.ln_f.weight", "transformer.ln_f.bias"});
}

TEST_CASE("LayOutMerge --only matching nothing is an invalid argument naming the pattern") {
  Fixture f;
  std::vector<std::string> none = {"decoder.*"};
  Status s = zero::LayOutMerge(f.plan, f.ckpt, none).status();
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "--only 'decoder.*' matches none of the 31 tensor names (e.g. transformer.emb_scale)");
}

TEST_CASE("OutputBytes and NumelOf") {
  GatherTensor t;
  t.dtype = torch::DType::kFloat32;
  t.shape = {203, 36};
  CHECK_EQ(NumelOf(t.shape), 7308u);
  CHECK_EQ(OutputBytes(t), 29232u);
  t.shape = {};
  CHECK_EQ(OutputBytes(t), 4u);
  t.shape = {3, 0};
  t.dtype = torch::DType::kInt64;
  CHECK_EQ(OutputBytes(t), 0u);
}

}  // namespace
}  // namespace zerofold::gather
