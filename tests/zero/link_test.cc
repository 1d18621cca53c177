#include "zero/link.h"

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "torch/cast.h"

namespace zerofold::zero {
namespace {

using torch::DType;

// Storages as bytes, by key.
class FakeReader : public ElementReader {
 public:
  std::map<std::string, std::vector<std::byte>> storages;

  void Floats(const std::string& key, std::vector<float> v) {
    auto& s = storages[key];
    s.resize(v.size() * 4);
    std::memcpy(s.data(), v.data(), s.size());
  }
  // fp16 values of the floats, rounded as torch rounds.
  void Halves(const std::string& key, std::vector<float> v) {
    auto& s = storages[key];
    s.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      uint16_t h = torch::Float32ToFloat16(bits);
      std::memcpy(s.data() + 2 * i, &h, 2);
    }
  }
  Status Read(const TensorMeta& t, uint64_t first, std::span<std::byte> out) override {
    const auto& s = storages.at(t.storage);
    uint64_t at = (static_cast<uint64_t>(t.storage_offset) + first) * torch::Info(t.dtype).itemsize;
    if (at + out.size() > s.size()) return Status::Corrupt("past the end");
    std::memcpy(out.data(), s.data() + at, out.size());
    return Status::OK();
  }
};

TensorMeta F32(std::string key, std::vector<int64_t> shape, int64_t offset = 0) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  return TensorMeta{DType::kFloat32, shape, stride, std::move(key), offset};
}
TensorMeta F16(std::string key, std::vector<int64_t> shape, int64_t offset = 0) {
  TensorMeta t = F32(std::move(key), std::move(shape), offset);
  t.dtype = DType::kFloat16;
  return t;
}

// Unfused: params a, b [2] and buffer c [2]; masters m0, m1 [2].
ModelStates Unfused() {
  ModelStates m;
  m.file = "mp_rank_00_model_states.pt";
  m.param_shapes_recorded = false;
  m.has_optimizer = true;
  m.optimizer_kind = Zero0Optimizer::kFp16Unfused;
  m.module = {{"a", F16("a", {2})}, {"b", F16("b", {2})}, {"c", F16("c", {2})}, {"tied", F16("a", {2})}};
  m.buffer_names = {"c"};
  m.optimizer_fp32_groups = {{F32("m0", {2}), F32("m1", {2})}};
  return m;
}

TEST_CASE("ZeRO-0 unfused masters link to the one param they round to, in any group order") {
  FakeReader r;
  r.Floats("m0", {1.0001f, 2.0f});
  r.Floats("m1", {3.0f, 4.0001f});
  r.Halves("a", {3.0f, 4.0001f});  // m1's
  r.Halves("b", {1.0001f, 2.0f});  // m0's
  r.Halves("c", {1.0001f, 2.0f});  // a buffer: never a candidate
  Result<Zero0Link> link = LinkZero0Masters(Unfused(), &r);
  REQUIRE_MESSAGE(link.ok(), link.status().ToString());
  REQUIRE_EQ(link->masters.size(), 2u);
  CHECK_EQ(link->masters[0].name, "b");
  CHECK_EQ(link->masters[0].tensor.storage, "m0");
  CHECK_EQ(link->masters[1].name, "a");
  CHECK(link->by_value.empty());

  // By structure alone both stay open, each naming both params.
  link = LinkZero0Masters(Unfused(), nullptr);
  REQUIRE(link.ok());
  CHECK(link->masters.empty());
  CHECK_EQ(link->by_value, std::vector<std::string>{"fp32_groups[0][0] [2]: a, b", "fp32_groups[0][1] [2]: a, b"});
}

TEST_CASE("ZeRO-0 unfused: a master that fits two params is refused naming them; one that fits none is corrupt") {
  FakeReader r;
  r.Floats("m0", {1.0f, 2.0f});
  r.Floats("m1", {1.00001f, 2.0f});  // rounds to the same fp16 values
  r.Halves("a", {1.0f, 2.0f});
  r.Halves("b", {1.0f, 2.0f});
  r.Halves("c", {0.0f, 0.0f});
  Result<Zero0Link> link = LinkZero0Masters(Unfused(), &r);
  REQUIRE_FALSE(link.ok());
  CHECK_EQ(link.status().code(), Code::kUnsupported);
  CHECK_EQ(link.status().path(), "mp_rank_00_model_states.pt");
  CHECK_EQ(link.status().record(), "fp32_groups[0][0] [2]");
  CHECK_NE(link.status().message().find("fits 2 params by shape and saved value: a, b"), std::string::npos);

  r.Halves("b", {5.0f, 6.0f});  // m0 and m1 both fit only a
  link = LinkZero0Masters(Unfused(), &r);
  REQUIRE_FALSE(link.ok());
  CHECK_EQ(link.status().code(), Code::kCorrupt);
  CHECK_EQ(link.status().record(), "fp32_groups[0][1] [2]");
}

TEST_CASE("ZeRO-0 fused: the flat fp32 group repeats the 16-bit flat buffer's layout") {
  ModelStates m;
  m.file = "f";
  m.optimizer_kind = Zero0Optimizer::kFp16Fused;
  m.module = {{"w", F16("0", {1, 2}, 0)}, {"bias", F16("0", {3}, 2)}, {"frozen", F16("1", {5})}};
  m.optimizer_fp32_groups = {{F32("7", {5})}};
  FakeReader r;
  r.Floats("7", {1, 2, 3, 4, 5});
  r.Halves("0", {1, 2, 3, 4, 5});
  r.Halves("1", {9, 9, 9, 9, 9});  // same size, other values: frozen, not the group
  Result<Zero0Link> link = LinkZero0Masters(m, &r);
  REQUIRE_MESSAGE(link.ok(), link.status().ToString());
  REQUIRE_EQ(link->masters.size(), 2u);
  CHECK_EQ(link->masters[0], NamedTensor{"w", F32("7", {1, 2}, 0)});
  CHECK_EQ(link->masters[1], NamedTensor{"bias", F32("7", {3}, 2)});
  // By structure, the frozen param's storage fits the group's size too.
  link = LinkZero0Masters(m, nullptr);
  REQUIRE(link.ok());
  CHECK_EQ(link->by_value.size(), 1u);
}

}  // namespace
}  // namespace zerofold::zero
