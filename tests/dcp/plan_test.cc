#include "dcp/plan.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::dcp {
namespace {

Metadata Keys(const std::vector<std::pair<std::string, bool>>& keys) {
  Metadata md;
  for (const auto& [key, tensor] : keys) {
    Entry e;
    e.key = key;
    e.is_tensor = tensor;
    md.entries.push_back(e);
  }
  return md;
}

TEST_CASE("SelectKeys: model weights by default, one 'model.' stripped, training state counted") {
  Metadata md = Keys({{"model.embed.weight", true},
                      {"model.lm_head.weight", true},
                      {"optimizer.state.embed.weight.exp_avg", true},
                      {"optimizer.param_groups.0.lr", false},
                      {"lr_scheduler.last_epoch", false},
                      {"train_state.step", true},
                      {"dataloader.dp_rank_0", true}});
  Result<Selection> s = SelectKeys(md, std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"embed.weight", "lm_head.weight"});
  CHECK_EQ(s->entries, std::vector<size_t>{0, 1});
  CHECK(s->stripped_model_prefix);
  CHECK_EQ(s->non_tensor, 2u);
  CHECK_EQ(s->left_out, std::map<std::string, size_t>{{"dataloader", 1}, {"optimizer", 1}, {"train_state", 1}});
}

TEST_CASE("SelectKeys: TorchTitan names at the top stay; a 'model.' on some keys only stays too") {
  Result<Selection> s = SelectKeys(Keys({{"layers.0.w", true}, {"model.x", true}, {"optimizer.s", true}}), std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"layers.0.w", "model.x"});
  CHECK_FALSE(s->stripped_model_prefix);
  // A key that is "model." alone would strip to nothing: kept as it is.
  s = SelectKeys(Keys({{"model.", true}}), std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"model."});
}

TEST_CASE("SelectKeys --select: the subtree, named relative to it; '' everything; no match refused") {
  Metadata md = Keys({{"model.w", true},
                      {"optimizer.state.w.exp_avg", true},
                      {"optimizer.state.w.step", true},
                      {"optimizer.stateful", true},
                      {"optimizer.param_groups.0.lr", false}});
  Result<Selection> s = SelectKeys(md, std::string("optimizer.state"));
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"w.exp_avg", "w.step"});
  CHECK_EQ(s->left_out, std::map<std::string, size_t>{{"model", 1}, {"optimizer", 1}});
  CHECK_EQ(s->left_out_why.at("model"), LeftOutWhy::kNotSelected);
  s = SelectKeys(md, std::string("model.w"));
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"model.w"});
  s = SelectKeys(md, std::string(""));
  REQUIRE(s.ok());
  CHECK_EQ(s->names.size(), 4u);
  Status bad = SelectKeys(md, std::string("optim")).status();
  CHECK_EQ(bad.code(), Code::kInvalidArgument);
  CHECK_EQ(bad.message(), "--select 'optim' matches none of the tensor keys (e.g. model.w)");
}

TEST_CASE("KeyGroup: training-state groups by their first component, the rest is the model") {
  const std::map<std::string, LeftOutWhy> training = TrainingStateGroups(Keys(
      {{"optimizer.state.w", true}, {"lr_scheduler", true}, {"train_state.step", true}, {"dataloader.x", true},
       {"optimizers.x", true}, {"model.layers.0", true}}));
  CHECK_EQ(KeyGroup(training, "optimizer.state.w"), "optimizer");
  CHECK_EQ(KeyGroup(training, "lr_scheduler"), "lr_scheduler");
  CHECK_EQ(KeyGroup(training, "train_state.step"), "train_state");
  CHECK_EQ(KeyGroup(training, "dataloader.x"), "dataloader");
  CHECK_EQ(KeyGroup(training, "optimizers.x"), "model");
  CHECK_EQ(KeyGroup(training, "model.layers.0"), "model");
}

TEST_CASE("SelectKeys: torch's {model, optim} recipe gives the model, 'model.' stripped, optim left out") {
  // As torch 2.6's get_state_dict + dcp.save({"model": ..., "optim": ...}) names them.
  Metadata md = Keys({{"model.embed.weight", true},
                      {"model.layer.bias", true},
                      {"optim.state.embed.weight.exp_avg", true},
                      {"optim.state.embed.weight.exp_avg_sq", true},
                      {"optim.state.layer.bias.step", true},
                      {"optim.param_groups.0.lr", false}});
  Result<Selection> s = SelectKeys(md, std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"embed.weight", "layer.bias"});
  CHECK(s->stripped_model_prefix);
  CHECK_EQ(s->left_out, std::map<std::string, size_t>{{"optim", 3}});
  CHECK_EQ(s->left_out_why, std::map<std::string, LeftOutWhy>{{"optim", LeftOutWhy::kName}});
  CHECK_EQ(s->non_tensor, 1u);
}

TEST_CASE("SelectKeys: a group of any name holding only optimizer state is left out by what it holds") {
  Metadata md = Keys({{"model.w", true},
                      {"opt_state.state.w.exp_avg", true},
                      {"opt_state.state.0.momentum_buffer", true},
                      {"opt_state.param_groups.0.lr", true},
                      {"sgd.state.w.momentum_buffer", true},
                      {"ema.state.w", true},           // no state name last: not optimizer state
                      {"half.state.w.exp_avg", true},  // one key of the group is no optimizer state:
                      {"half.w", true}});              // the group stays
  const std::map<std::string, LeftOutWhy> training = TrainingStateGroups(md);
  CHECK_EQ(training, std::map<std::string, LeftOutWhy>{{"opt_state", LeftOutWhy::kOptimizerState},
                                                       {"sgd", LeftOutWhy::kOptimizerState}});
  Result<Selection> s = SelectKeys(md, std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"model.w", "ema.state.w", "half.state.w.exp_avg", "half.w"});
  CHECK_FALSE(s->stripped_model_prefix);
  CHECK_EQ(s->left_out, std::map<std::string, size_t>{{"opt_state", 3}, {"sgd", 1}});
  CHECK_EQ(s->left_out_why.at("sgd"), LeftOutWhy::kOptimizerState);
  CHECK_EQ(LeftOutWhyName(LeftOutWhy::kOptimizerState), "optimizer state");
}

TEST_CASE("SelectKeys: Hugging Face names at the top ('model.layers', 'lm_head') all stay, unstripped") {
  Result<Selection> s = SelectKeys(Keys({{"model.layers.0.w", true}, {"lm_head.weight", true},
                                          {"optim.state.lm_head.weight.exp_avg", true}}),
                                   std::nullopt);
  REQUIRE(s.ok());
  CHECK_EQ(s->names, std::vector<std::string>{"model.layers.0.w", "lm_head.weight"});
  CHECK_FALSE(s->stripped_model_prefix);
}

}  // namespace
}  // namespace zerofold::dcp
