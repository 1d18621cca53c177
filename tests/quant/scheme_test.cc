// The scheme detector over hand-made tensor lists: each scheme by names and
// by config, partial trailing blocks, several compressed-tensors config
// groups (regex and class targets, ignore), and the refusals: a scale of
// another shape (the message names both shapes), a weight without its
// scale, a scale without its weight, an unknown quant_method, names that
// cannot decide.
#include "quant/scheme.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "json/reader.h"

namespace zerofold::quant {
namespace {

using safetensors::Dtype;

SourceTensor T(std::string name, Dtype dtype, std::vector<uint64_t> shape, std::vector<int64_t> values = {}) {
  return {std::move(name), dtype, std::move(shape), 0, 0, 0, std::move(values)};
}

const std::vector<std::string> kFiles = {"model.safetensors"};

json::Value Config(const char* text) {
  Result<json::Value> v = json::Parse(std::string_view(text));
  REQUIRE(v.ok());
  return *v;
}

TEST_CASE("fp8-block by names: 128 x 128 blocks, partial at the end; kept tensors in order") {
  std::vector<SourceTensor> t = {T("a.norm", Dtype::BF16, {4}), T("a.weight", Dtype::F8_E4M3, {200, 300}),
                                 T("a.weight_scale_inv", Dtype::F32, {2, 3}), T("b", Dtype::I64, {1})};
  Result<Plan> p = PlanDequantize(nullptr, t, kFiles);
  REQUIRE(p.ok());
  REQUIRE(p->groups.size() == 1);
  const Group& g = p->groups[0];
  CHECK(g.scheme == Scheme::kFp8Block);
  CHECK(g.name == "a.weight");
  CHECK(g.shape == std::vector<uint64_t>{200, 300});
  CHECK(g.block_rows == 128);
  CHECK(g.scale_cols == 3);
  REQUIRE(p->items.size() == 3);
  CHECK(!p->items[0].group);
  CHECK(p->items[1].group);
  CHECK(p->items[2].index == 3);
}

TEST_CASE("fp8-block: the config's block size; a scale of another shape is refused by name") {
  json::Value c = Config(R"({"quant_method": "fp8", "weight_block_size": [64, 128]})");
  std::vector<SourceTensor> t = {T("a.weight", Dtype::F8_E4M3, {200, 300}), T("a.weight_scale_inv", Dtype::F32, {4, 3})};
  CHECK(PlanDequantize(&c, t, kFiles).ok());
  t[1].shape = {2, 3};
  Result<Plan> p = PlanDequantize(&c, t, kFiles);
  REQUIRE(!p.ok());
  CHECK(p.status().code() == Code::kCorrupt);
  CHECK(p.status().record() == "a.weight_scale_inv");
  CHECK(p.status().message() ==
        "has shape [2, 3], not [4, 3] for weight a.weight of 200 x 300 elements in blocks of 64 x 128");
}

TEST_CASE("refusals: missing scale, orphan scale, unknown method, names that cannot decide") {
  std::vector<SourceTensor> missing = {T("a.weight", Dtype::F8_E4M3, {2, 2})};
  Result<Plan> p = PlanDequantize(nullptr, missing, kFiles);
  CHECK(p.status().code() == Code::kCorrupt);
  CHECK(p.status().record() == "a.weight");
  std::vector<SourceTensor> orphan = {T("a.weight", Dtype::BF16, {2, 2}), T("a.weight_scale", Dtype::F32, {1})};
  p = PlanDequantize(nullptr, orphan, kFiles);
  CHECK(p.status().code() == Code::kCorrupt);
  CHECK(p.status().record() == "a.weight_scale");
  json::Value gptq = Config(R"({"quant_method": "gptq"})");
  CHECK(PlanDequantize(&gptq, orphan, kFiles).status().code() == Code::kUnsupported);
  std::vector<SourceTensor> packed = {T("a.weight_packed", Dtype::I32, {4, 1}), T("a.weight_scale", Dtype::BF16, {4, 1}),
                                      T("a.weight_shape", Dtype::I64, {2}, {4, 8})};
  p = PlanDequantize(nullptr, packed, kFiles);
  CHECK(p.status().code() == Code::kInvalidArgument);
  // fp8 in a checkpoint whose method writes mxfp4 only.
  json::Value mx = Config(R"({"quant_method": "mxfp4"})");
  std::vector<SourceTensor> fp8 = {T("a.weight", Dtype::F8_E4M3, {2, 2}), T("a.weight_scale_inv", Dtype::F32, {1, 1})};
  CHECK(PlanDequantize(&mx, fp8, kFiles).status().code() == Code::kCorrupt);
}

TEST_CASE("compressed-tensors: config groups by regex and class, ignore, packed zero points") {
  json::Value c = Config(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "ignore": ["lm_head"],
    "config_groups": {
      "a": {"targets": ["re:.*down$"], "weights": {"num_bits": 8, "strategy": "channel", "symmetric": true}},
      "b": {"targets": ["Linear"], "weights": {"num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": false}}}})");
  std::vector<SourceTensor> t = {
      T("m.down.weight_packed", Dtype::I32, {5, 2}), T("m.down.weight_scale", Dtype::BF16, {5, 1}),
      T("m.down.weight_shape", Dtype::I64, {2}, {5, 7}),
      T("m.up.weight_packed", Dtype::I32, {9, 9}), T("m.up.weight_scale", Dtype::F32, {9, 3}),
      T("m.up.weight_shape", Dtype::I32, {2}, {9, 72}), T("m.up.weight_zero_point", Dtype::I32, {2, 3}),
      T("lm_head.weight", Dtype::BF16, {3, 3})};
  Result<Plan> p = PlanDequantize(&c, t, kFiles);
  REQUIRE(p.ok());
  REQUIRE(p->groups.size() == 2);
  CHECK(p->groups[0].bits == 8);
  CHECK(p->groups[0].shape == std::vector<uint64_t>{5, 7});
  CHECK(p->groups[1].bits == 4);
  CHECK(p->groups[1].block_cols == 32);
  CHECK(p->groups[1].scale_cols == 3);  // 72 / 32, the last group partial
  CHECK(p->groups[1].zero_point_packed);
  CHECK(p->items.size() == 3);
  // The zero point's packed shape is checked: ceil(9 x 4 / 32) = 2 rows, not 5.
  t[6].shape = {5, 3};
  Result<Plan> bad = PlanDequantize(&c, t, kFiles);
  CHECK(bad.status().code() == Code::kCorrupt);
  CHECK(bad.status().record() == "m.up.weight_zero_point");
  t[6].shape = {2, 3};
  // A weight_shape whose decode would overflow is refused, not wrapped around.
  t[5].values = {9, int64_t{1} << 61};
  CHECK(PlanDequantize(&c, t, kFiles).status().record() == "m.up.weight_shape");
  t[5].values = {9, 72};
  // A module in ignore that is quantized anyway is refused.
  t[3].name = "lm_head.weight_packed";
  t[4].name = "lm_head.weight_scale";
  t[5].name = "lm_head.weight_shape";
  t[6].name = "lm_head.weight_zero_point";
  t[7].name = "x.weight";
  CHECK(PlanDequantize(&c, t, kFiles).status().code() == Code::kCorrupt);
}

TEST_CASE("mxfp4: [E, N, G, 16] blocks become X of [E, G*32, N]; NVFP4 both conventions") {
  std::vector<SourceTensor> t = {T("e.gate_up_proj_blocks", Dtype::U8, {2, 6, 3, 16}),
                                 T("e.gate_up_proj_scales", Dtype::U8, {2, 6, 3})};
  Result<Plan> p = PlanDequantize(nullptr, t, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].name == "e.gate_up_proj");
  CHECK(p->groups[0].shape == std::vector<uint64_t>{2, 96, 6});
  CHECK(p->groups[0].transpose);
  t[1].shape = {2, 6, 2};
  CHECK(PlanDequantize(nullptr, t, kFiles).status().code() == Code::kCorrupt);
  std::vector<SourceTensor> mo = {T("q.weight", Dtype::U8, {4, 20}), T("q.weight_scale", Dtype::F8_E4M3, {4, 3}),
                                  T("q.weight_scale_2", Dtype::F32, {}), T("q.input_scale", Dtype::F32, {})};
  p = PlanDequantize(nullptr, mo, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].scheme == Scheme::kNvfp4);
  CHECK(!p->groups[0].global_divides);
  CHECK(p->groups[0].members.size() == 4);  // input_scale dropped with the weight
  CHECK(p->items.size() == 1);
  std::vector<SourceTensor> ct = {T("q.weight_packed", Dtype::U8, {4, 20}), T("q.weight_scale", Dtype::F8_E4M3, {4, 3}),
                                  T("q.weight_global_scale", Dtype::F32, {1})};
  p = PlanDequantize(nullptr, ct, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].scheme == Scheme::kNvfp4CT);
  CHECK(p->groups[0].global_divides);
  CHECK(p->groups[0].name == "q.weight");
}

}  // namespace
}  // namespace zerofold::quant

namespace zerofold::quant {
namespace {

TEST_CASE("DeepSeek-V4: FP4 experts in I8 with E8M0 .scale; E4M3 linears with E8M0 block .scale; int8 naive") {
  json::Value c = Config(R"({"quant_method": "fp8", "scale_fmt": "ue8m0", "weight_block_size": [128, 128]})");
  std::vector<SourceTensor> t = {T("e.w1.weight", Dtype::I8, {96, 32}), T("e.w1.scale", Dtype::F8_E8M0, {96, 2}),
                                 T("a.weight", Dtype::F8_E4M3, {300, 200}), T("a.scale", Dtype::F8_E8M0, {3, 2})};
  Result<Plan> p = PlanDequantize(&c, t, kFiles);
  REQUIRE(p.ok());
  REQUIRE(p->groups.size() == 2);
  CHECK(p->groups[0].scheme == Scheme::kFp4E8M0);
  CHECK(p->groups[0].shape == std::vector<uint64_t>{96, 64});
  CHECK(p->groups[0].e8m0_scale);
  CHECK(p->groups[1].scheme == Scheme::kFp8Block);
  t[1].shape = {96, 1};
  CHECK(PlanDequantize(&c, t, kFiles).status().record() == "e.w1.scale");
  json::Value ct = Config(R"({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"],
    "format": "int-quantized", "weights": {"num_bits": 8, "strategy": "channel", "symmetric": false}}}})");
  std::vector<SourceTensor> n = {T("q.weight", Dtype::I8, {4, 6}), T("q.weight_scale", Dtype::BF16, {4, 1})};
  CHECK(PlanDequantize(&ct, n, kFiles).status().code() == Code::kCorrupt);  // asymmetric without zero points
  n.push_back(T("q.weight_zero_point", Dtype::I8, {4, 1}));
  p = PlanDequantize(&ct, n, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].scheme == Scheme::kInt8);
  CHECK(p->groups[0].zero_point.has_value());
}

}  // namespace
}  // namespace zerofold::quant

namespace zerofold::quant {
namespace {

TEST_CASE("compressed-tensors activation ordering: weight_g_idx maps columns to groups") {
  json::Value c = Config(R"({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"],
    "format": "pack-quantized", "weights": {"num_bits": 4, "strategy": "group", "group_size": 2, "actorder": "group"}}}})");
  std::vector<SourceTensor> t = {T("m.weight_packed", Dtype::I32, {1, 1}), T("m.weight_scale", Dtype::F32, {1, 3}),
                                 T("m.weight_shape", Dtype::I64, {2}, {1, 5}),
                                 T("m.weight_g_idx", Dtype::I32, {5}, {2, 0, 1, 0, 1})};
  Result<Plan> p = PlanDequantize(&c, t, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].g_idx == std::vector<uint32_t>{2, 0, 1, 0, 1});
  CHECK(p->items.size() == 1);  // g_idx dropped with the weight
  t[3].values = {2, 0, 0, 0, 1};  // group 0 holds 3 columns, not 2
  CHECK(PlanDequantize(&c, t, kFiles).status().record() == "m.weight_g_idx");
  t[3].values = {-1, -1, -1, -1, -1};  // column order
  p = PlanDequantize(&c, t, kFiles);
  REQUIRE(p.ok());
  CHECK(p->groups[0].g_idx.empty());
}

}  // namespace
}  // namespace zerofold::quant
