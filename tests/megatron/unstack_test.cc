#include "megatron/unstack.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../gather/simulate.h"

namespace zerofold::megatron {
namespace {

std::string Split(std::optional<StackedName> s) { return s ? s->head + "<i>." + s->rest : "-"; }

TEST_CASE("LayerStack and ExpertStack follow Megatron's names (fixtures/megatron/README, Unstack naming)") {
  CHECK_EQ(Split(LayerStack("decoder.layers.mlp.linear_fc1.weight")), "decoder.layers.<i>.mlp.linear_fc1.weight");
  CHECK_EQ(Split(LayerStack("module.decoder.layers.self_attention.linear_qkv.weight")),
           "module.decoder.layers.<i>.self_attention.linear_qkv.weight");
  CHECK_EQ(Split(LayerStack("state.exp_avg.decoder.layers.mlp.linear_fc1.weight")),
           "state.exp_avg.decoder.layers.<i>.mlp.linear_fc1.weight");
  CHECK_EQ(Split(LayerStack("decoder.layers.0.mlp.linear_fc1.weight")), "-");
  CHECK_EQ(Split(LayerStack("decoder.layers.12.x")), "-");
  CHECK_EQ(Split(LayerStack("decoder.layers.0x.w")), "decoder.layers.<i>.0x.w");
  CHECK_EQ(Split(LayerStack("xdecoder.layers.w")), "-");
  CHECK_EQ(Split(LayerStack("decoder.final_layernorm.weight")), "-");
  CHECK_EQ(Split(LayerStack("decoder.layers.")), "-");
  CHECK_EQ(Split(ExpertStack("decoder.layers.0.mlp.experts.experts.linear_fc1.weight")),
           "decoder.layers.0.mlp.experts.experts.<i>.linear_fc1.weight");
  CHECK_EQ(Split(ExpertStack("decoder.layers.0.mlp.experts.experts.3.linear_fc1.weight")), "-");
  CHECK_EQ(Split(ExpertStack("decoder.layers.0.mlp.experts.linear_fc1.weight")), "-");
  CHECK_EQ(Split(ExpertStack("mlp.experts.experts.w")), "-");
}

TEST_CASE("Unstack: [L, E, 2] experts become L x E tensors in index order, values the slices'") {
  gather::GatherTensor t;
  t.name = "decoder.layers.mlp.experts.experts.linear_fc2.bias";
  t.shape = t.grid = {2, 3, 2};
  for (int64_t l = 0; l < 2; ++l) {  // one chunk per layer, as stacked layers are saved
    gather::Piece p;
    p.offsets = {l, 0, 0};
    p.sizes = {1, 3, 2};
    p.strides = {6, 2, 1};
    p.file = static_cast<uint32_t>(l);
    t.pieces.push_back(p);
  }
  gather::GatherTensor other;
  other.name = "embedding.word_embeddings.weight";
  other.shape = other.grid = {2};
  other.pieces = {t.pieces[0]};
  other.pieces[0].offsets = {0};
  other.pieces[0].sizes = {2};
  other.pieces[0].strides = {1};
  const std::vector<std::vector<int64_t>> storages = {{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}};
  Result<Unstacked> u = Unstack({other, t});
  REQUIRE_MESSAGE(u.ok(), u.status().ToString());
  CHECK_EQ(u->split_keys, 1u);
  REQUIRE_EQ(u->tensors.size(), 7u);
  CHECK_EQ(u->tensors[0].name, "embedding.word_embeddings.weight");
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t e = 0; e < 3; ++e) {
      const gather::GatherTensor& part = u->tensors[static_cast<size_t>(1 + l * 3 + e)];
      CHECK_EQ(part.name, "decoder.layers." + std::to_string(l) + ".mlp.experts.experts." + std::to_string(e) +
                              ".linear_fc2.bias");
      CHECK_EQ(part.shape, std::vector<int64_t>{2});
      CHECK_EQ(gather::testing::Simulate(part, storages), std::vector<int64_t>{l * 6 + e * 2, l * 6 + e * 2 + 1});
    }
  }
}

}  // namespace
}  // namespace zerofold::megatron
