#include "model/plain_values.h"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../torch/graph_builder.h"
#include "torch/read.h"
#include "torch/tensor_recognizer.h"
#include "zerofold/env.h"

namespace zerofold::model {
namespace {

torch::Checkpoint Load(const std::string& rel) {
  std::unique_ptr<RandomSource> src = Env::Default()->OpenRandom(std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel).value();
  return torch::ReadCheckpoint(*src).value();
}

using Entries = std::vector<std::pair<std::string, std::string>>;
using Names = std::vector<std::string>;

TEST_CASE("plain values beside tensors become JSON text keyed by their path") {
  PlainValues v = CollectPlainValues(Load("torch/optimizer_state.pt"));
  const Entries want = {
      {"optimizer.param_groups",
       "[{\"weight_decay\":0.01,\"name\":\"decay\",\"lr\":0.001,\"betas\":[0.9,0.999],\"eps\":1e-08,"
       "\"amsgrad\":false,\"maximize\":false,\"foreach\":null,\"capturable\":false,\"differentiable\":false,"
       "\"fused\":false,\"params\":[0,1,2]},{\"weight_decay\":0.0,\"name\":\"no_decay\",\"lr\":0.001,"
       "\"betas\":[0.9,0.999],\"eps\":1e-08,\"amsgrad\":false,\"maximize\":false,\"foreach\":null,"
       "\"capturable\":false,\"differentiable\":false,\"fused\":false,\"params\":[3,4,5]}]"},
      {"epoch", "3"},
      {"global_step", "1099511627777"},
      {"best_metric", "0.25"},
      {"negative", "-7"},
      {"lr_history", "[0.001,5e-04,0.00025]"},
      {"notes", "null"},
      {"flags", "[true,false]"},
      {"tags", "[\"fp32\",\"adam\",\"\xc3\xbc" "n\xc3\xaf" "code\"]"},
      {"empty", "{\"list\":[],\"dict\":{},\"tuple\":[]}"},
      {"nested", "{\"deep\":{\"deeper\":[1,2.5,\"x\",null,{\"leaf\":true}]}}"},
      {"int_keys", "{\"0\":\"zero\",\"7\":\"seven\"}"},
  };
  CHECK_EQ(v.entries, want);
  CHECK(v.skipped.empty());
}

TEST_CASE("values that are not plain data are named, not written") {
  PlainValues v = CollectPlainValues(Load("torch/python_values.pt"));
  CHECK(v.entries.empty());
  CHECK_EQ(v.skipped, Names{"blob", "mutable_blob", "set", "frozenset", "complex", "slice"});
}

TEST_CASE("a DeepSpeed model-states file: torch.Size is an array, a set is skipped") {
  PlainValues v = CollectPlainValues(Load("deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt"));
  std::map<std::string, std::string> by_key(v.entries.begin(), v.entries.end());
  CHECK_EQ(by_key.size(), v.entries.size());
  CHECK_EQ(by_key["frozen_param_shapes"], "{\"transformer.wpe.weight\":[17,36]}");
  CHECK_EQ(by_key["shared_params"], "{\"lm_head.weight\":\"transformer.wte.weight\"}");
  CHECK_EQ(by_key["ds_version"], "\"0.14.5\"");
  CHECK_EQ(by_key["dp_world_size"], "3");
  CHECK_EQ(by_key["param_shapes"].rfind("[{\"transformer.h.0.attn.c_attn.weight\":[108,36],", 0), 0u);
  CHECK_EQ(by_key.count("module"), 0u);
  CHECK_EQ(v.skipped, Names{"sparse_tensor_module_names"});
}

TEST_CASE("a value whose text would pass the header limit is skipped: shared lists nested 40 deep") {
  // torch.save({"w": t, "x": x, "small": s, "epoch": 3}) with x = 1, then 40
  // times x = [x, x] (a 1 KB file; its JSON text would be 4 TB), and s the
  // same 3 times.
  torch::testing::GraphBuilder b;
  pickle::NodeId x = b.Int(1);
  for (int i = 0; i < 40; ++i) x = b.List({x, x});
  pickle::NodeId small = b.Int(1);
  for (int i = 0; i < 3; ++i) small = b.List({small, small});
  pickle::NodeId root = b.Dict({{b.Str("w"), b.TensorV2(b.Pid("FloatStorage", "0", 2), 0, {2}, {1})},
                                {b.Str("x"), x},
                                {b.Str("small"), small},
                                {b.Str("epoch"), b.Int(3)}});
  torch::Recognized r = torch::RecognizeTensors(b.g, root).value();
  torch::Checkpoint ckpt;
  ckpt.graph = b.g;
  ckpt.root = root;
  ckpt.storages = r.storages;
  ckpt.tensors = r.tensors;
  PlainValues v = CollectPlainValues(ckpt);
  CHECK_EQ(v.entries, Entries{{"small", "[[[1,1],[1,1]],[[1,1],[1,1]]]"}, {"epoch", "3"}});
  CHECK_EQ(v.skipped, Names{"x"});
}

TEST_CASE("a state dict of tensors only, or a bare tensor, has no plain values") {
  for (const char* f : {"torch/state_dict.pt", "torch/bare_tensor.pt"}) {
    CAPTURE(f);
    PlainValues v = CollectPlainValues(Load(f));
    CHECK(v.entries.empty());
    CHECK(v.skipped.empty());
  }
}

}  // namespace
}  // namespace zerofold::model
