#include "model/select.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "torch/read.h"
#include "zerofold/env.h"

namespace zerofold::model {
namespace {

torch::Checkpoint Load(const std::string& rel) {
  std::unique_ptr<RandomSource> src = Env::Default()->OpenRandom(std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel).value();
  return torch::ReadCheckpoint(*src).value();
}

std::vector<std::string> Names(const torch::Checkpoint& ckpt) {
  std::vector<std::string> names;
  for (const torch::Tensor& t : ckpt.tensors) names.push_back(t.name);
  return names;
}

TEST_CASE("SplitKeyPath splits on slashes and refuses empty keys") {
  CHECK(SplitKeyPath("").value().empty());
  CHECK_EQ(SplitKeyPath("module").value(), std::vector<std::string>{"module"});
  CHECK_EQ(SplitKeyPath("optimizer_state_dict/single_partition_of_fp32_groups/0").value(),
           std::vector<std::string>{"optimizer_state_dict", "single_partition_of_fp32_groups", "0"});
  for (const char* bad : {"/a", "a/", "a//b", "/"}) {
    CAPTURE(bad);
    Result<std::vector<std::string>> r = SplitKeyPath(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), Code::kInvalidArgument);
  }
  CHECK_EQ(SplitKeyPath("a//b").status().message(), "--select \"a//b\" has an empty key at character 3");
}

TEST_CASE("selecting a nested dict renames its tensors from the new root") {
  torch::Checkpoint ckpt = Load("torch/optimizer_state.pt");
  const size_t storages = ckpt.storages.size();
  REQUIRE(SelectSubtree(ckpt, "optimizer/state/2", {}).ok());
  CHECK_EQ(Names(ckpt), std::vector<std::string>{"step", "exp_avg", "exp_avg_sq"});
  // Only the subtree's storages remain, renumbered.
  CHECK_LT(ckpt.storages.size(), storages);
  REQUIRE_EQ(ckpt.storages.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) CHECK_EQ(ckpt.tensors[i].storage, i);
  CHECK_EQ(ckpt.tensors[1].shape, std::vector<int64_t>{3, 8});
  CHECK_EQ(ckpt.storages[1].nbytes, 3u * 8 * 4);
  CHECK_EQ(ckpt.graph.kind(ckpt.root), pickle::Kind::kDict);
}

TEST_CASE("int keys and list indices are given in decimal; one tensor selected keeps its key") {
  torch::Checkpoint ckpt = Load("torch/optimizer_state.pt");
  REQUIRE(SelectSubtree(ckpt, "optimizer/state/0/exp_avg", {}).ok());
  REQUIRE_EQ(ckpt.tensors.size(), 1u);
  CHECK_EQ(ckpt.tensors[0].name, "exp_avg");
  CHECK_EQ(ckpt.graph.kind(ckpt.root), pickle::Kind::kDict);
  CHECK_EQ(ckpt.tensors[0].shape, std::vector<int64_t>{8, 4});
  torch::Checkpoint lists = Load("torch/optimizer_state.pt");
  REQUIRE(SelectSubtree(lists, "optimizer/param_groups/1", {}).ok());
  CHECK(lists.tensors.empty());
}

TEST_CASE("module of a ZeRO-2 model-states file holds the 16-bit weights") {
  torch::Checkpoint ckpt = Load("deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt");
  const size_t all = ckpt.tensors.size();
  REQUIRE(SelectSubtree(ckpt, "module", {}).ok());
  CHECK_LT(ckpt.tensors.size(), all);
  for (const torch::Tensor& t : ckpt.tensors) CHECK_LT(t.storage, ckpt.storages.size());
  REQUIRE_FALSE(ckpt.tensors.empty());
  CHECK_EQ(ckpt.tensors[0].name, "transformer.emb_scale");
  CHECK_EQ(ckpt.tensors[2].name, "transformer.wte.weight");
  for (const torch::Tensor& t : ckpt.tensors) CHECK_EQ(t.name.rfind("module.", 0), std::string::npos);
}

struct MissingCase {
  const char* keypath;
  const char* message;
};

TEST_CASE("a missing key lists the keys at the level that failed") {
  const MissingCase cases[] = {
      {"optim", "--select: no key \"optim\" in the dict at the root; its keys: \"optimizer\", \"epoch\", "
                "\"global_step\", \"best_metric\", \"negative\", \"lr_history\", \"notes\", \"flags\", \"tags\", "
                "\"empty\", \"nested\", \"int_keys\""},
      {"optimizer/state/6", "--select: no key \"6\" in the dict at \"optimizer/state\"; its keys: 0, 1, 2, 3, 4, 5"},
      {"optimizer/param_groups/2",
       "--select: no key \"2\" in the list at \"optimizer/param_groups\"; its keys: 0, 1"},
      {"epoch/x", "--select: no key \"x\" in the value with no keys at \"epoch\", which has no keys"},
      {"optimizer/state/0/step/x", "--select: \"optimizer/state/0/step\" is a tensor, which has no key \"x\""},
      {"empty/dict/0", "--select: no key \"0\" in the dict at \"empty/dict\", which has no keys"},
  };
  for (const MissingCase& c : cases) {
    CAPTURE(c.keypath);
    torch::Checkpoint ckpt = Load("torch/optimizer_state.pt");
    Status s = SelectSubtree(ckpt, c.keypath, {});
    CHECK_EQ(s.code(), Code::kInvalidArgument);
    CHECK_EQ(s.message(), c.message);
  }
}

TEST_CASE("a long key list is cut after 20 keys") {
  torch::Checkpoint ckpt = Load("deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt");
  Status s = SelectSubtree(ckpt, "module/nothing", {});
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_NE(s.message().find("; its keys: \"transformer.emb_scale\", "), std::string::npos);
  CHECK_NE(s.message().find(" more)"), std::string::npos);
}

TEST_CASE("KeepOnly keeps matching names and their ties, flattened into one dict") {
  torch::Checkpoint ckpt = Load("hf/bloated/pytorch_model-00001-of-00003.bin");
  const std::vector<std::string> lm_head = {"lm_head.*"};
  REQUIRE(KeepOnly(ckpt, lm_head, {}, false).ok());
  // model.embed.weight views the same bytes as lm_head.weight: it follows.
  CHECK_EQ(Names(ckpt), std::vector<std::string>{"model.embed.weight", "lm_head.weight"});
  CHECK_EQ(ckpt.graph.kind(ckpt.root), pickle::Kind::kDict);
  CHECK_EQ(ckpt.storages.size(), 1u);

  torch::Checkpoint nested = Load("torch/optimizer_state.pt");
  const std::vector<std::string> exp_avg = {"*.exp_avg"};
  REQUIRE(KeepOnly(nested, exp_avg, {}, false).ok());
  REQUIRE_FALSE(nested.tensors.empty());
  for (const torch::Tensor& t : nested.tensors) {
    CAPTURE(t.name);
    CHECK(t.name.starts_with("optimizer.state."));
    CHECK(t.name.ends_with(".exp_avg"));
  }
  CHECK_EQ(nested.storages.size(), nested.tensors.size());
}

TEST_CASE("KeepOnly: no match is an error naming some names, unless none is allowed") {
  torch::Checkpoint ckpt = Load("hf/bloated/pytorch_model-00001-of-00003.bin");
  const std::vector<std::string> none = {"nothing"};
  Status s = KeepOnly(ckpt, none, {}, false);
  REQUIRE_FALSE(s.ok());
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK(s.message().find("\"model.embed.weight\"") != std::string::npos);
  REQUIRE(KeepOnly(ckpt, none, {}, true).ok());
  CHECK(ckpt.tensors.empty());
  CHECK(ckpt.storages.empty());
  torch::Checkpoint all = Load("hf/bloated/pytorch_model-00001-of-00003.bin");
  REQUIRE(KeepOnly(all, {}, {}, false).ok());
  CHECK_EQ(all.tensors.size(), 7u);
}

}  // namespace
}  // namespace zerofold::model
