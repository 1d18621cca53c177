#include "hfexport/table.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "json/reader.h"

namespace zerofold::hfexport {
namespace {

TEST_CASE("MatchPattern: {X} matches digits, {name} any text, a repeated placeholder the same text") {
  auto m = MatchPattern("decoder.layers.{L}.mlp.experts.experts.{E}.linear_fc1.weight",
                        "decoder.layers.12.mlp.experts.experts.3.linear_fc1.weight");
  REQUIRE(m);
  CHECK_EQ((*m)["L"], "12");
  CHECK_EQ((*m)["E"], "3");
  CHECK_FALSE(MatchPattern("decoder.layers.{L}.x", "decoder.layers.a.x"));
  CHECK_FALSE(MatchPattern("decoder.layers.{L}.x", "decoder.layers..x"));
  CHECK_FALSE(MatchPattern("a.{L}", "a.1.b"));  // whole names only
  m = MatchPattern("mlp.experts.linear_fc1.weight{E}", "mlp.experts.linear_fc1.weight15");
  REQUIRE(m);
  CHECK_EQ((*m)["E"], "15");
  m = MatchPattern("{name}", "model.layers.0.w");
  REQUIRE(m);
  CHECK_EQ((*m)["name"], "model.layers.0.w");
  CHECK(MatchPattern("{A}.{A}", "3.3"));
  CHECK_FALSE(MatchPattern("{A}.{A}", "3.4"));
}

TEST_CASE("Substitute: bindings and {X+key} config arithmetic") {
  Result<json::Value> config = json::Parse(R"({"num_hidden_layers": 61, "bad": "x"})");
  REQUIRE(config.ok());
  Result<std::string> s = Substitute("model.layers.{I+num_hidden_layers}.enorm.weight", {{"I", "1"}}, *config);
  REQUIRE(s.ok());
  CHECK_EQ(*s, "model.layers.62.enorm.weight");
  CHECK_FALSE(Substitute("model.layers.{L}.w", {}, *config).ok());
  CHECK_FALSE(Substitute("model.layers.{I+bad}.w", {{"I", "1"}}, *config).ok());
  CHECK_FALSE(Substitute("model.layers.{I+absent}.w", {{"I", "1"}}, *config).ok());
}

TEST_CASE("ParseTable: the format, and each refusal with the file and offset") {
  const char* good = R"({"family": "f", "source": "megatron", "model_types": ["llama"], "facts": ["x"],
    "rules": [{"from": "a.{L}.qkv", "op": "split_qkv", "to": ["q.{L}", "k.{L}", "v.{L}"], "heads": 4},
              {"from": "o", "op": "drop", "if": "tie_word_embeddings"},
              {"from": "fc1", "op": "split_rows", "to": ["g", "u"]}]})";
  Result<Table> t = ParseTable(good, "t.json");
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK_EQ(t->rules.size(), 3u);
  CHECK(t->rules[0].op == Op::kSplitQkv);
  CHECK_EQ(t->rules[1].if_key, "tie_word_embeddings");
  struct Bad {
    const char* text;
    const char* message;
  };
  for (const Bad& b : {
           Bad{R"({"family": "f", "source": "megatron", "model_types": ["llama"], "rules": [{"from": "a", "op": "zap"}]})",
               "t.json: @ 94: corrupt: family table: unknown op 'zap'"},
           Bad{R"({"family": "f", "source": "megatron", "model_types": ["llama"], "rules": [{"from": "a", "op": "split_qkv", "to": "b"}]})",
               "t.json: @ 74: corrupt: family table: op split_qkv of 'a' takes 3 'to' names, not 1"},
           Bad{R"({"family": "f", "source": "megatron", "model_types": ["llama"], "rules": [{"from": "a{L", "to": "b"}]})",
               "t.json: @ 83: corrupt: family table: pattern 'a{L' leaves a brace open"},
           Bad{R"({"family": "f", "source": "nemo", "model_types": ["llama"], "rules": []})",
               "t.json: @ 0: corrupt: family table: 'source' is 'nemo', not megatron, torchtitan or hf"},
           Bad{R"({"family": "f", "source": "megatron", "rules": []})",
               "t.json: @ 0: corrupt: family table: a table needs 'family', 'source', 'model_types' and 'rules'"},
           Bad{R"({"family": "f", "sauce": 1})", "t.json: @ 16: corrupt: family table: unknown member 'sauce'"},
           Bad{R"({"family": "f", "source": "megatron", "model_types": ["llama"], "rules": [{"from": "a", "to": "b", "form": 1}]})",
               "t.json: @ 99: corrupt: family table: unknown rule member 'form'"},
           Bad{R"({"family": "f", "source": "megatron", "model_types": ["llama"], "rules": [], "ties": [{"name": "a"}]})",
               "t.json: @ 86: corrupt: family table: a tie is {\"name\": NAME, \"owner\": NAME, \"if\": KEY (optional)}"},
           Bad{R"({"family": )", "t.json: @ 11: corrupt: JSON: unexpected end of input, expected a value"},
       }) {
    CAPTURE(b.text);
    Result<Table> r = ParseTable(b.text, "t.json");
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().ToString(), b.message);
  }
}

TEST_CASE("BuiltinTables: every table in tables/hf parses, one per family and source") {
  Result<std::vector<Table>> tables = BuiltinTables();
  REQUIRE_MESSAGE(tables.ok(), tables.status().ToString());
  std::vector<std::string> names;
  for (const Table& t : *tables) names.push_back(t.source + "/" + t.family);
  for (const char* want : {"megatron/llama", "megatron/qwen2", "megatron/qwen3", "megatron/qwen3_moe", "megatron/mixtral",
                           "megatron/deepseek_v3", "torchtitan/llama", "torchtitan/qwen3", "torchtitan/deepseek_v3", "hf/hf"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), want) != names.end(), want);
}

}  // namespace
}  // namespace zerofold::hfexport
