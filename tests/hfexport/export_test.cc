#include "hfexport/export.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gather/simulate.h"
#include "io/mem_env.h"
#include "safetensors/test_files.h"

namespace zerofold::hfexport {
namespace {

using gather::GatherTensor;
using gather::testing::View;

// A [rows, 2] float32 trainer tensor, one piece.
GatherTensor Trainer(std::string name, int64_t rows) {
  GatherTensor t;
  t.name = std::move(name);
  t.shape = t.grid = {rows, 2};
  t.pieces = {View({0, 0}, {rows, 2}, 0, 0, {2, 1})};
  return t;
}

// BASE folder b: config.json and a model.safetensors of [rows, 2] tensors (dtype code `code`).
void Base(io::MemEnv& env, const std::string& config, const std::vector<std::pair<std::string, int64_t>>& tensors,
          const char* code) {
  env.SetFile("b/config.json", config);
  env.SetFile("b/tokenizer.json", "{}");
  std::string header = "{";
  size_t at = 0;
  const size_t item = std::string_view(code) == "F32" ? 4 : 2;
  for (const auto& [name, rows] : tensors) {
    const size_t n = static_cast<size_t>(rows) * 2 * item;
    if (at) header.append(",");
    header.append("\"").append(name).append("\":{\"dtype\":\"").append(code).append("\",\"shape\":[");
    header.append(std::to_string(rows)).append(",2],\"data_offsets\":[").append(std::to_string(at)).append(",");
    header.append(std::to_string(at + n)).append("]}");
    at += n;
  }
  header.append("}");
  env.SetFile("b/model.safetensors", safetensors::testing::File(header, at));
}

constexpr const char* kTable = R"({"family": "t", "source": "megatron", "model_types": ["toy"],
  "rules": [{"from": "embedding.word_embeddings.weight", "to": "model.embed_tokens.weight"},
            {"from": "output_layer.weight", "to": "lm_head.weight"},
            {"from": "mtp.layers.{I}.eh_proj.weight", "to": "model.layers.{I+num_hidden_layers}.eh_proj.weight"}],
  "ties": [{"name": "model.layers.{L}.embed_tokens.weight", "owner": "model.embed_tokens.weight"},
           {"name": "model.layers.{L}.shared_head.head.weight", "owner": "lm_head.weight"}]})";

TEST_CASE("ExportHf: BASE's names, dtypes and order; ties by pattern; MTP layer arithmetic; copies") {
  io::MemEnv env;
  env.SetFile("t.json", kTable);
  Base(env, R"({"model_type": "toy", "num_hidden_layers": 2})",
       {{"lm_head.weight", 5}, {"model.embed_tokens.weight", 5}, {"model.layers.2.eh_proj.weight", 4},
        {"model.layers.2.embed_tokens.weight", 5}, {"model.layers.2.shared_head.head.weight", 5}},
       "BF16");
  gather::GatherPlan plan;
  plan.tensors = {Trainer("embedding.word_embeddings.weight", 5), Trainer("output_layer.weight", 5),
                  Trainer("mtp.layers.0.eh_proj.weight", 4)};
  HfOptions options;
  options.base = "b";
  options.tables = {"t.json"};
  Result<HfExport> e = ExportHf(&env, plan, SourceKind::kMegatron, options);
  REQUIRE_MESSAGE(e.ok(), e.status().ToString());
  CHECK_EQ(e->table, "t.json");
  CHECK_EQ(e->order.front(), "lm_head.weight");
  REQUIRE_EQ(e->plan.tensors.size(), 3u);
  CHECK_EQ(e->plan.tensors[2].name, "model.layers.2.eh_proj.weight");
  for (const GatherTensor& t : e->plan.tensors) CHECK(t.dtype == torch::DType::kBFloat16);  // BASE's
  CHECK_EQ(e->plan.ties, std::vector<gather::Tie>{{"model.layers.2.embed_tokens.weight", "model.embed_tokens.weight"},
                                                  {"model.layers.2.shared_head.head.weight", "lm_head.weight"}});
  CHECK_EQ(e->copies, std::vector<std::string>{"config.json", "tokenizer.json"});

  options.dtype = torch::DType::kFloat16;  // --dtype overrides BASE's
  e = ExportHf(&env, plan, SourceKind::kMegatron, options);
  REQUIRE(e.ok());
  CHECK(e->plan.tensors[0].dtype == torch::DType::kFloat16);
}

TEST_CASE("ExportHf: refusals name the tensors, the table and BASE") {
  io::MemEnv env;
  env.SetFile("t.json", kTable);
  Base(env, R"({"model_type": "toy", "num_hidden_layers": 2})", {{"lm_head.weight", 5}, {"model.embed_tokens.weight", 6}},
       "F32");
  HfOptions options;
  options.base = "b";
  options.tables = {"t.json"};
  gather::GatherPlan plan;
  plan.tensors = {Trainer("embedding.word_embeddings.weight", 5), Trainer("output_layer.weight", 5),
                  Trainer("decoder.layers.0.foo", 3), Trainer("mtp.layers.0.eh_proj.weight", 4)};
  Result<HfExport> e = ExportHf(&env, plan, SourceKind::kMegatron, options);
  REQUIRE_FALSE(e.ok());
  CHECK_EQ(e.status().ToString(), "b: unsupported: 1 trainer tensors no rule of t.json maps: decoder.layers.0.foo "
                                  "(--drop-unmapped leaves them out)");
  options.drop_unmapped = true;
  e = ExportHf(&env, plan, SourceKind::kMegatron, options);
  REQUIRE_FALSE(e.ok());
  CHECK_EQ(e.status().ToString(),
           "b: corrupt: the export does not match BASE's weights; 1 not in BASE: model.layers.2.eh_proj.weight; "
           "1 of another shape: model.embed_tokens.weight [5, 2] (BASE [6, 2]) (mapped by t.json)");
  env.SetFile("b/config.json", R"({"model_type": "gpt2"})");
  e = ExportHf(&env, plan, SourceKind::kDcp, options);
  REQUIRE_FALSE(e.ok());
  CHECK_EQ(e.status().ToString(), "b/config.json: unsupported: no family table for model_type 'gpt2' from a torchtitan "
                                  "checkpoint (add one with --hf-table FILE; tables/hf/README.md)");
  env.SetFile("b/config.json", R"({"architectures": []})");
  e = ExportHf(&env, plan, SourceKind::kMegatron, options);
  REQUIRE_FALSE(e.ok());
  CHECK_EQ(e.status().ToString(), "b/config.json: corrupt: config.json has no string model_type");
}

}  // namespace
}  // namespace zerofold::hfexport
