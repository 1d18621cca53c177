#include "plan/shrink_plan.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::plan {
namespace {

using torch::DType;

// A checkpoint model built by hand: storages of `nbytes`, tensors as
// (storage, dtype, shape, stride, offset).
struct ViewSpec {
  uint32_t storage;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t offset;
};

torch::Checkpoint Model(std::vector<uint64_t> storage_nbytes, std::vector<ViewSpec> views) {
  torch::Checkpoint ckpt;
  for (size_t i = 0; i < storage_nbytes.size(); ++i) {
    torch::Storage s{};
    s.key = std::to_string(i);
    s.dtype = DType::kFloat32;
    s.nbytes = storage_nbytes[i];
    s.record_size = storage_nbytes[i];
    ckpt.storages.push_back(s);
  }
  for (size_t i = 0; i < views.size(); ++i) {
    torch::Tensor t{};
    t.name = std::string("t").append(std::to_string(i));
    t.dtype = views[i].dtype;
    t.shape = views[i].shape;
    t.stride = views[i].stride;
    t.storage_offset = views[i].offset;
    t.storage = views[i].storage;
    ckpt.tensors.push_back(t);
  }
  return ckpt;
}

TEST_CASE("a fully referenced storage is kept whole with its offsets") {
  // Two float32 params that tile a 40-byte buffer exactly: nothing to trim.
  torch::Checkpoint ckpt = Model({40}, {{0, DType::kFloat32, {4}, {1}, 0}, {0, DType::kFloat32, {6}, {1}, 4}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 1u);
  CHECK(plan.storages[0].whole);
  CHECK_EQ(plan.storages[0].nbytes(), 40u);
  CHECK_EQ(plan.views[1].storage_offset, 4);
  CHECK_EQ(plan.bytes_before, 40u);
  CHECK_EQ(plan.bytes_after, 40u);
  CHECK(plan.changed_storages.empty());
}

TEST_CASE("disjoint views of a bloated flat buffer get storages of their own") {
  // A 400-byte flat buffer; views at elements 10..19 and 50..55 (touching
  // nothing), and one at 20..29 that touches the first view: separate.
  torch::Checkpoint ckpt = Model({400}, {{0, DType::kFloat32, {10}, {1}, 10},
                                         {0, DType::kFloat32, {2, 3}, {3, 1}, 50},
                                         {0, DType::kFloat32, {10}, {1}, 20}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 3u);
  CHECK_EQ(plan.storages[0].key, "0.0");
  CHECK_EQ(plan.storages[0].begin, 40u);
  CHECK_EQ(plan.storages[0].end, 80u);
  CHECK_EQ(plan.storages[1].key, "0.1");
  CHECK_EQ(plan.storages[1].begin, 80u);
  CHECK_EQ(plan.storages[1].end, 120u);
  CHECK_EQ(plan.storages[2].key, "0.2");
  CHECK_EQ(plan.storages[2].begin, 200u);
  CHECK_EQ(plan.storages[2].end, 224u);
  for (const ViewPlacement& v : plan.views) CHECK_EQ(v.storage_offset, 0);
  CHECK_EQ(plan.views[0].output_storage, 0u);
  CHECK_EQ(plan.views[1].output_storage, 2u);
  CHECK_EQ(plan.views[2].output_storage, 1u);
  CHECK_EQ(plan.bytes_before, 400u);
  CHECK_EQ(plan.bytes_after, 40u + 24u + 40u);
  CHECK_EQ(plan.changed_storages, std::vector<uint32_t>{0});
}

TEST_CASE("overlapping views (ties, views of views) stay in one storage at the same relative offsets") {
  // Tied weight (same range twice), a transposed view of it, and a row view
  // starting inside it; plus padding at the end of the buffer.
  torch::Checkpoint ckpt = Model({200}, {{0, DType::kFloat32, {3, 4}, {4, 1}, 5},
                                         {0, DType::kFloat32, {3, 4}, {4, 1}, 5},
                                         {0, DType::kFloat32, {4, 3}, {1, 4}, 5},
                                         {0, DType::kFloat32, {4}, {1}, 13}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 1u);
  CHECK_FALSE(plan.storages[0].whole);
  CHECK_EQ(plan.storages[0].begin, 20u);
  CHECK_EQ(plan.storages[0].end, 68u);
  CHECK_EQ(plan.views[0].storage_offset, 0);
  CHECK_EQ(plan.views[1].storage_offset, 0);
  CHECK_EQ(plan.views[2].storage_offset, 0);
  CHECK_EQ(plan.views[3].storage_offset, 8);
}

TEST_CASE("zero-stride and strided views take their stride-aware extent") {
  // expand(): stride 0 covers one element; a column of a 5x5 matrix covers
  // elements 2, 7, ..., 22 (extent 21 elements).
  torch::Checkpoint ckpt = Model({400}, {{0, DType::kFloat32, {1000}, {0}, 30},
                                         {0, DType::kFloat32, {5}, {5}, 2}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 2u);
  CHECK_EQ(plan.storages[0].begin, 8u);
  CHECK_EQ(plan.storages[0].end, 92u);
  CHECK_EQ(plan.storages[1].begin, 120u);
  CHECK_EQ(plan.storages[1].end, 124u);
  CHECK_EQ(plan.views[0].output_storage, 1u);
}

TEST_CASE("empty views take no bytes") {
  // An empty tensor alone in a storage gets a zero-byte storage; one beside a
  // non-empty view points at offset 0 of that view's storage.
  torch::Checkpoint ckpt = Model({64, 32}, {{0, DType::kFloat32, {0, 4}, {4, 1}, 3},
                                            {1, DType::kFloat32, {0}, {1}, 7},
                                            {1, DType::kFloat32, {2}, {1}, 4}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 2u);
  CHECK_EQ(plan.storages[0].nbytes(), 0u);
  CHECK_EQ(plan.storages[1].begin, 16u);
  CHECK_EQ(plan.storages[1].end, 24u);
  CHECK_EQ(plan.views[1].output_storage, 1u);
  CHECK_EQ(plan.views[1].storage_offset, 0);
  CHECK_EQ(plan.views[2].storage_offset, 0);
}

TEST_CASE("storages no tensor views are kept whole; output follows input record order and keeps keys") {
  torch::Checkpoint ckpt = Model({16, 16, 16}, {{2, DType::kFloat32, {4}, {1}, 0}, {0, DType::kFloat32, {4}, {1}, 0}});
  ckpt.storages[0].data_offset = 100;
  ckpt.storages[1].data_offset = 300;
  ckpt.storages[2].data_offset = 500;
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 3u);
  CHECK_EQ(plan.storages[0].input_storage, 0u);
  CHECK_EQ(plan.storages[0].key, "0");
  CHECK_EQ(plan.storages[1].input_storage, 1u);
  CHECK(plan.storages[1].whole);
  CHECK_EQ(plan.storages[1].key, "1");
  CHECK_EQ(plan.storages[2].input_storage, 2u);
  CHECK_EQ(plan.storages[2].key, "2");
  CHECK_EQ(plan.views[0].output_storage, 2u);
  CHECK_EQ(plan.bytes_before, 48u);
  CHECK_EQ(plan.bytes_after, 48u);
  // Records not in string order of their keys (a rewritten archive): the
  // output is numbered in record order instead.
  ckpt.storages[0].data_offset = 900;
  plan = PlanShrink(ckpt).value();
  CHECK_EQ(plan.storages[0].input_storage, 1u);
  CHECK_EQ(plan.storages[0].key, "0");
  CHECK_EQ(plan.storages[1].input_storage, 2u);
  CHECK_EQ(plan.storages[1].key, "1");
}

TEST_CASE("keys: split parts sort after their storage; legacy input is numbered with equal width") {
  // Eleven disjoint views split storage "1" into eleven parts: 1.00 .. 1.10.
  std::vector<ViewSpec> views;
  for (int i = 0; i < 11; ++i) views.push_back({1, DType::kFloat32, {1}, {1}, 2 * i});
  views.push_back({0, DType::kFloat32, {1}, {1}, 0});
  torch::Checkpoint ckpt = Model({4, 400}, views);
  ckpt.storages[1].data_offset = 64;
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 12u);
  CHECK_EQ(plan.storages[0].key, "0");
  CHECK_EQ(plan.storages[1].key, "1.00");
  CHECK_EQ(plan.storages[11].key, "1.10");
  ckpt.format = torch::Format::kTorchLegacy;
  plan = PlanShrink(ckpt).value();
  CHECK_EQ(plan.storages[0].key, "00");
  CHECK_EQ(plan.storages[11].key, "11");
}

TEST_CASE("a view of another dtype in the same cluster keeps whole-element offsets") {
  // Untyped storage seen as float32 at byte 6..? is impossible; as int16 at
  // element 3 (byte 6) overlapping a float32 view at bytes 4..12.
  torch::Checkpoint ckpt = Model({64}, {{0, DType::kFloat32, {2}, {1}, 1}, {0, DType::kInt16, {2}, {1}, 3}});
  ShrinkPlan plan = PlanShrink(ckpt).value();
  REQUIRE_EQ(plan.storages.size(), 1u);
  CHECK_EQ(plan.storages[0].begin, 4u);
  CHECK_EQ(plan.views[0].storage_offset, 0);
  CHECK_EQ(plan.views[1].storage_offset, 1);
}

}  // namespace
}  // namespace zerofold::plan
