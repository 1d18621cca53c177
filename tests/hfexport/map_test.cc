#include "hfexport/map.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gather/simulate.h"
#include "json/reader.h"

namespace zerofold::hfexport {
namespace {

using gather::GatherTensor;
using gather::testing::Iota;
using gather::testing::Simulate;
using gather::testing::View;

// A [rows, cols] tensor in two row blocks (TP-like), storage i holding its
// block in C order: element (r, c) reads r * cols + c + 1000 * ...
GatherTensor Rows(std::string name, int64_t rows, int64_t cols, uint32_t file) {
  GatherTensor t;
  t.name = std::move(name);
  t.shape = t.grid = {rows, cols};
  const int64_t half = rows / 2;
  t.pieces = {View({0, 0}, {half, cols}, file, 0, {cols, 1}), View({half, 0}, {rows - half, cols}, file + 1, 0, {cols, 1})};
  return t;
}

// storages[f] for Rows(.., file f) and f + 1: the element (r, c) of the
// whole is r * cols + c.
std::vector<std::vector<int64_t>> Storages(int64_t rows, int64_t cols) {
  std::vector<std::vector<int64_t>> s(6);
  for (uint32_t f = 0; f < 6; f += 2) {
    s[f] = Iota(rows / 2 * cols, 0);
    s[f + 1] = Iota((rows - rows / 2) * cols, rows / 2 * cols);
  }
  return s;
}

// The rows `rows` of a [*, cols] matrix whose element (r, c) is r * cols + c.
std::vector<int64_t> Pick(const std::vector<int64_t>& rows, int64_t cols) {
  std::vector<int64_t> out;
  for (int64_t r : rows)
    for (int64_t c = 0; c < cols; ++c) out.push_back(r * cols + c);
  return out;
}

const GatherTensor* Find(const Mapped& m, const std::string& name) {
  for (const GatherTensor& t : m.plan.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Table Parse(const char* text) {
  Result<Table> t = ParseTable(text, "t.json");
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  return *t;
}

TEST_CASE("ApplyTable: split_qkv (GQA), split_rows, trim_vocab, rope_permute, drop, strip, unmapped") {
  // heads 4, groups 2, head_dim 2: per group [q 4 rows, k 2, v 2] = 8 rows; 16 rows in all.
  const Table table = Parse(R"({"family": "t", "source": "megatron", "model_types": ["llama"],
    "strip_prefixes": ["module."],
    "rules": [{"from": "l.{L}.qkv", "op": "split_qkv", "to": ["q.{L}", "k.{L}", "v.{L}"]},
              {"from": "l.{L}.fc1", "op": "split_rows", "to": ["gate.{L}", "up.{L}"]},
              {"from": "emb", "op": "trim_vocab", "to": "embed"},
              {"from": "out", "op": "drop", "if": "tie_word_embeddings"},
              {"from": "wq", "op": "rope_permute", "to": "q_proj", "heads": "num_key_value_heads"}]})");
  Result<json::Value> config = json::Parse(
      R"({"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 8, "vocab_size": 5, "tie_word_embeddings": true})");
  REQUIRE(config.ok());
  gather::GatherPlan plan;
  plan.tensors = {Rows("module.l.0.qkv", 16, 3, 0), Rows("l.0.fc1", 6, 3, 2), Rows("emb", 7, 3, 4), Rows("out", 7, 3, 4),
                  Rows("wq", 8, 3, 0), Rows("stray", 2, 3, 0)};
  Result<Mapped> m = ApplyTable(plan, table, *config);
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK_EQ(m->unmapped, std::vector<std::string>{"stray"});
  CHECK_EQ(m->dropped, std::vector<std::string>{"out"});
  struct Want {
    const char* name;
    std::vector<int64_t> shape;
    std::vector<int64_t> rows;
    int64_t all_rows;
  };
  for (const Want& w : {
           Want{"q.0", {8, 3}, {0, 1, 2, 3, 8, 9, 10, 11}, 16}, Want{"k.0", {4, 3}, {4, 5, 12, 13}, 16},
           Want{"v.0", {4, 3}, {6, 7, 14, 15}, 16}, Want{"gate.0", {3, 3}, {0, 1, 2}, 6}, Want{"up.0", {3, 3}, {3, 4, 5}, 6},
           Want{"embed", {5, 3}, {0, 1, 2, 3, 4}, 7},
           // rows (head, i, pair) -> (head, pair, i): 2 heads of head_dim 4.
           Want{"q_proj", {8, 3}, {0, 2, 1, 3, 4, 6, 5, 7}, 8},
       }) {
    CAPTURE(w.name);
    const GatherTensor* t = Find(*m, w.name);
    REQUIRE(t);
    CHECK_EQ(t->shape, w.shape);
    CHECK(gather::CheckTiling(t->grid, t->pieces, {}).ok());
    CHECK_EQ(Simulate(*t, Storages(w.all_rows, 3)), Pick(w.rows, 3));
  }

  // Untied: the drop rule's condition fails and no other rule maps `out`.
  Result<json::Value> untied = json::Parse(R"({"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 8, "vocab_size": 5})");
  REQUIRE(untied.ok());
  m = ApplyTable(plan, table, *untied);
  REQUIRE(m.ok());
  CHECK_EQ(m->unmapped, std::vector<std::string>{"out", "stray"});
}

TEST_CASE("ApplyTable: unstack names each index; refusals name the tensor") {
  const Table table = Parse(R"({"family": "t", "source": "torchtitan", "model_types": ["qwen3"],
    "rules": [{"from": "layers.{L}.moe.experts.w1", "op": "unstack", "to": "model.layers.{L}.mlp.experts.{E}.gate_proj.weight"},
              {"from": "qkv", "op": "split_qkv", "to": ["q", "k", "v"]},
              {"from": "emb", "op": "trim_vocab", "to": "embed"},
              {"from": "a", "to": "same"}, {"from": "b", "to": "same"}]})");
  Result<json::Value> config = json::Parse(R"({"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 2, "vocab_size": 9})");
  REQUIRE(config.ok());
  GatherTensor experts;
  experts.name = "layers.1.moe.experts.w1";
  experts.shape = experts.grid = {3, 2, 2};
  experts.pieces = {View({0, 0, 0}, {3, 2, 2}, 0, 0, {4, 2, 1})};
  gather::GatherPlan plan;
  plan.tensors = {experts};
  Result<Mapped> m = ApplyTable(plan, table, *config);
  REQUIRE(m.ok());
  REQUIRE_EQ(m->plan.tensors.size(), 3u);
  for (int64_t e = 0; e < 3; ++e) {
    const GatherTensor& t = m->plan.tensors[static_cast<size_t>(e)];
    CHECK_EQ(t.name, "model.layers.1.mlp.experts." + std::to_string(e) + ".gate_proj.weight");
    CHECK_EQ(Simulate(t, {Iota(12, 0)}), Iota(4, 4 * e));
  }
  struct Bad {
    GatherTensor t;
    const char* message;
  };
  for (const Bad& b : {
           Bad{Rows("qkv", 14, 3, 0), "t.json: qkv: corrupt: op split_qkv of rule 'qkv' does not fit shape [14, 3]: 2 query groups of (2 + 2) x 2 rows are 16 rows"},
           Bad{Rows("emb", 8, 3, 0), "t.json: emb: corrupt: op trim_vocab of rule 'emb' does not fit shape [8, 3]: fewer rows than config.json vocab_size 9"},
       }) {
    gather::GatherPlan p;
    p.tensors = {b.t};
    Result<Mapped> r = ApplyTable(p, table, *config);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().ToString(), b.message);
  }
  // tied: no output; the pair to compare, or a refusal when the owner is missing or of another shape.
  const Table tied = Parse(R"({"family": "t", "source": "torchtitan", "model_types": ["qwen3"],
    "rules": [{"from": "output.weight", "op": "tied", "to": "tok_embeddings.weight"},
              {"from": "tok_embeddings.weight", "to": "model.embed_tokens.weight"}]})");
  gather::GatherPlan heads;
  heads.tensors = {Rows("output.weight", 4, 3, 0), Rows("tok_embeddings.weight", 4, 3, 2)};
  heads.tensors[0].dtype = torch::DType::kBFloat16;
  Result<Mapped> t = ApplyTable(heads, tied, *config);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK_EQ(t->dropped, std::vector<std::string>{"output.weight"});
  REQUIRE_EQ(t->tied.size(), 1u);
  CHECK_EQ(t->tied[0].first.name, "output.weight");
  CHECK_EQ(t->tied[0].second.name, "tok_embeddings.weight");
  CHECK(t->tied[0].first.dtype == torch::DType::kFloat32);  // compared as float32
  REQUIRE_EQ(t->plan.tensors.size(), 1u);
  heads.tensors[1] = Rows("tok_embeddings.weight", 6, 3, 2);
  t = ApplyTable(heads, tied, *config);
  REQUIRE_FALSE(t.ok());
  CHECK_EQ(t.status().ToString(), "t.json: output.weight: corrupt: tied to tok_embeddings.weight, which the checkpoint holds with shape [6, 3]");
  heads.tensors.pop_back();
  t = ApplyTable(heads, tied, *config);
  REQUIRE_FALSE(t.ok());
  CHECK_EQ(t.status().ToString(), "t.json: output.weight: corrupt: tied to tok_embeddings.weight, which the checkpoint lacks");

  gather::GatherPlan two;
  two.tensors = {Rows("a", 2, 3, 0), Rows("b", 2, 3, 0)};
  Result<Mapped> r = ApplyTable(two, table, *config);
  REQUIRE_FALSE(r.ok());
  CHECK_EQ(r.status().ToString(), "t.json: b: corrupt: two trainer tensors map to same");
}

}  // namespace
}  // namespace zerofold::hfexport
