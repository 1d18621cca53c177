#include "diff/diff.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "support/checkpoint_builder.h"
#include "verify/verify.h"

namespace zerofold::diff {
namespace {

using torch::DType;

// One tensor over its own storage in its own file: `bytes` are the storage.
struct Side {
  std::unique_ptr<io::MemSource> src;
  torch::Checkpoint ckpt;

  TensorRef Ref(size_t i = 0) const { return {src.get(), &ckpt, &ckpt.tensors[i]}; }
};

Side MakeSide(std::vector<std::byte> bytes, std::vector<testing::View> views) {
  Side s;
  const uint64_t n = bytes.size();
  s.src = std::make_unique<io::MemSource>("side", std::move(bytes));
  std::vector<uint64_t> storages(1, n);
  for (const testing::View& v : views) CHECK_EQ(v.storage, 0u);
  s.ckpt = testing::BuildCheckpoint(storages, views);
  return s;
}

std::vector<std::byte> F32Bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(4 * v.size());
  for (size_t i = 0; i < v.size(); ++i) io::EncodeU32le(out.data() + 4 * i, std::bit_cast<uint32_t>(v[i]));
  return out;
}

std::vector<std::byte> F64Bytes(const std::vector<double>& v) {
  std::vector<std::byte> out(8 * v.size());
  for (size_t i = 0; i < v.size(); ++i) io::EncodeU64le(out.data() + 8 * i, std::bit_cast<uint64_t>(v[i]));
  return out;
}

std::vector<int64_t> Contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  return stride;
}

Side F32Side(const std::vector<float>& v, std::vector<int64_t> shape, std::string name = "w") {
  std::vector<int64_t> stride = Contiguous(shape);
  return MakeSide(F32Bytes(v), {{name, 0, DType::kFloat32, shape, stride, 0}});
}

DiffOptions Exact(size_t buffer = 4096) {
  DiffOptions o;
  o.buffer_bytes = buffer;
  return o;
}

DiffOptions CloseOpts(double atol, double rtol, bool equal_nan = false) {
  DiffOptions o;
  o.atol = atol;
  o.rtol = rtol;
  o.equal_nan = equal_nan;
  return o;
}

TEST_CASE("diff: equal tensors are the same, with the digest TensorDigest computes") {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  Side a = F32Side(v, {2, 3}), b = F32Side(v, {2, 3});
  Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(d.ok());
  CHECK(d->same);
  CHECK(d->values_compared);
  CHECK_EQ(d->differing, 0u);
  CHECK_EQ(d->numel, 6u);
  CHECK(d->first_index.empty());
  REQUIRE(d->digest_a.has_value());
  std::vector<std::byte> buffer(64);
  Result<torch::Hash128> h = torch::TensorDigest(*a.src, a.ckpt, a.ckpt.tensors[0], buffer);
  REQUIRE(h.ok());
  CHECK_EQ(*d->digest_a, *h);
  CHECK_EQ(*d->digest_b, *h);
  CHECK_EQ(d->max_abs_diff, 0.0);
}

TEST_CASE("diff: one element off gives its index, count and differences") {
  std::vector<float> va(15), vb(15);
  for (int i = 0; i < 15; ++i) va[i] = vb[i] = static_cast<float>(i + 1);
  va[7] = 8.5f;  // b holds 8: |a-b| = 0.5, relative 0.0625
  Side a = F32Side(va, {3, 5}), b = F32Side(vb, {3, 5});
  Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(d.ok());
  CHECK_FALSE(d->same);
  CHECK_EQ(d->differing, 1u);
  CHECK_EQ(d->first_index, std::vector<int64_t>{1, 2});
  CHECK(d->numeric);
  CHECK_EQ(d->max_abs_diff, 0.5);
  CHECK_EQ(d->max_rel_diff, 0.0625);
  CHECK(*d->digest_a != *d->digest_b);
  // Within tolerance it is close; just outside it is not.
  Result<TensorDiff> close = DiffTensor(a.Ref(), b.Ref(), CloseOpts(0.5, 0));
  REQUIRE(close.ok());
  CHECK(close->same);
  CHECK_EQ(close->differing, 0u);
  CHECK_EQ(close->max_abs_diff, 0.5);
  Result<TensorDiff> far = DiffTensor(a.Ref(), b.Ref(), CloseOpts(0.25, 0.03));  // 0.25 + 0.24 < 0.5
  REQUIRE(far.ok());
  CHECK_FALSE(far->same);
  CHECK_EQ(far->differing, 1u);
  Result<TensorDiff> rel = DiffTensor(a.Ref(), b.Ref(), CloseOpts(0.25, 0.032));  // 0.25 + 0.256 >= 0.5
  REQUIRE(rel.ok());
  CHECK(rel->same);
}

TEST_CASE("diff: NaN is equal bit for bit, close only with equal_nan, and outside the differences") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Side a = F32Side({nan, 1, 2}, {3}), b = F32Side({nan, 1, 2}, {3});
  Result<TensorDiff> exact = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(exact.ok());
  CHECK(exact->same);
  Result<TensorDiff> close = DiffTensor(a.Ref(), b.Ref(), CloseOpts(1e-8, 1e-5));
  REQUIRE(close.ok());
  CHECK_FALSE(close->same);
  CHECK_EQ(close->differing, 1u);
  CHECK_EQ(close->first_index, std::vector<int64_t>{0});
  Result<TensorDiff> nan_ok = DiffTensor(a.Ref(), b.Ref(), CloseOpts(1e-8, 1e-5, true));
  REQUIRE(nan_ok.ok());
  CHECK(nan_ok->same);
  // NaN against a number: different in every mode, and not in max_abs_diff.
  Side c = F32Side({1, nan, 5}, {3}), d = F32Side({1, 2, 4}, {3});
  Result<TensorDiff> mixed = DiffTensor(c.Ref(), d.Ref(), CloseOpts(0, 0, true));
  REQUIRE(mixed.ok());
  CHECK_EQ(mixed->differing, 2u);
  CHECK_EQ(mixed->first_index, std::vector<int64_t>{1});
  CHECK_EQ(mixed->max_abs_diff, 1.0);
  CHECK_EQ(mixed->max_rel_diff, 0.25);
}

TEST_CASE("diff: -0.0 and 0.0 differ bit for bit and are close") {
  Side a = F32Side({-0.0f, 1}, {2}), b = F32Side({0.0f, 1}, {2});
  Result<TensorDiff> exact = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(exact.ok());
  CHECK_FALSE(exact->same);
  CHECK_EQ(exact->differing, 1u);
  CHECK_EQ(exact->max_abs_diff, 0.0);
  Result<TensorDiff> close = DiffTensor(a.Ref(), b.Ref(), CloseOpts(0, 0));
  REQUIRE(close.ok());
  CHECK(close->same);
}

TEST_CASE("diff: infinities are close only to themselves") {
  const float inf = std::numeric_limits<float>::infinity();
  Side a = F32Side({inf, -inf, inf}, {3}), b = F32Side({inf, -inf, -inf}, {3});
  Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), CloseOpts(1e30, 1e30));
  REQUIRE(d.ok());
  CHECK_EQ(d->differing, 1u);
  CHECK_EQ(d->first_index, std::vector<int64_t>{2});
}

TEST_CASE("diff: names only in one side, shape and dtype differences") {
  Side a1 = F32Side({1, 2}, {2}, "both"), a2 = F32Side({1}, {1}, "only_a");
  Side b1 = F32Side({1, 2}, {1, 2}, "both"), b2 = F32Side({1}, {1}, "only_b");
  Result<DiffReport> r = DiffTensorSets({a1.Ref(), a2.Ref()}, {b1.Ref(), b2.Ref()}, Exact());
  REQUIRE(r.ok());
  CHECK_EQ(r->only_a, std::vector<std::string>{"only_a"});
  CHECK_EQ(r->only_b, std::vector<std::string>{"only_b"});
  REQUIRE_EQ(r->tensors.size(), 1u);
  CHECK_FALSE(r->tensors[0].same);
  CHECK_FALSE(r->tensors[0].values_compared);
  CHECK_EQ(r->tensors[0].shape_b, std::vector<int64_t>{1, 2});
  CHECK_EQ(r->different, 1u);
  CHECK_FALSE(r->same());

  // float32 against float64 of the same values: different without tolerance,
  // close with one (the values widened to float64).
  Side f = F32Side({0.5f, 1.25f}, {2});
  Side g = MakeSide(F64Bytes({0.5, 1.25}), {{"w", 0, DType::kFloat64, {2}, {1}, 0}});
  Result<TensorDiff> exact = DiffTensor(f.Ref(), g.Ref(), Exact());
  REQUIRE(exact.ok());
  CHECK_FALSE(exact->same);
  CHECK_FALSE(exact->values_compared);
  CHECK_EQ(exact->dtype_b, DType::kFloat64);
  Result<TensorDiff> close = DiffTensor(f.Ref(), g.Ref(), CloseOpts(0, 0));
  REQUIRE(close.ok());
  CHECK(close->same);
  CHECK(close->values_compared);
  CHECK_FALSE(close->digest_a.has_value());

  // Two tensors of one name on a side: refused.
  Side dup = F32Side({1}, {1}, "both");
  Result<DiffReport> twice = DiffTensorSets({a1.Ref(), dup.Ref()}, {b1.Ref()}, Exact());
  CHECK_EQ(twice.status().code(), Code::kCorrupt);
  CHECK_EQ(twice.status().record(), "both");
}

TEST_CASE("diff: tiny buffers, tensors over many blocks, a transposed view against a contiguous one") {
  // A: [7, 11, 3] float64 contiguous. B: the same logical tensor stored as
  // [3, 11, 7] and viewed through permuted strides. A few elements changed.
  const int64_t n0 = 7, n1 = 11, n2 = 3;
  std::vector<double> logical(n0 * n1 * n2);
  for (size_t i = 0; i < logical.size(); ++i) logical[i] = 0.25 * static_cast<double>(i) - 20;
  std::vector<double> a_values = logical;
  const std::vector<std::pair<size_t, double>> changes = {{5, 1.5}, {100, -0.75}, {230, 3.0}};
  for (auto [i, delta] : changes) a_values[i] += delta;
  std::vector<double> stored(logical.size());  // B's storage: [k][j][i]
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      for (int64_t k = 0; k < n2; ++k) stored[(k * n1 + j) * n0 + i] = logical[(i * n1 + j) * n2 + k];
  Side a = MakeSide(F64Bytes(a_values), {{"t", 0, DType::kFloat64, {n0, n1, n2}, {n1 * n2, n2, 1}, 0}});
  Side b = MakeSide(F64Bytes(stored), {{"t", 0, DType::kFloat64, {n0, n1, n2}, {1, n0, n0 * n1}, 0}});
  for (size_t buffer : {64, 72, 100, 1000, 1 << 20}) {
    CAPTURE(buffer);
    Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), Exact(buffer));
    REQUIRE(d.ok());
    CHECK_EQ(d->differing, 3u);
    CHECK_EQ(d->first_index, std::vector<int64_t>{0, 1, 2});  // flat 5 of [7, 11, 3]
    CHECK_EQ(d->max_abs_diff, 3.0);
    double max_rel = 0;
    for (auto [i, delta] : changes) max_rel = std::max(max_rel, std::fabs(delta) / std::fabs(logical[i]));
    CHECK_EQ(d->max_rel_diff, max_rel);
    // Equal views over different layouts: the same digest at every buffer size.
    Result<TensorDiff> same = DiffTensor(b.Ref(), b.Ref(), Exact(buffer));
    REQUIRE(same.ok());
    CHECK(same->same);
    std::vector<std::byte> scratch(64);
    Result<torch::Hash128> h = torch::TensorDigest(*b.src, b.ckpt, b.ckpt.tensors[0], scratch);
    REQUIRE(h.ok());
    CHECK_EQ(*same->digest_a, *h);
  }
}

TEST_CASE("diff: integers, half precision, complex and scalars") {
  // int32: counted and measured as numbers.
  std::vector<std::byte> ia(12), ib(12);
  const int32_t xa[3] = {5, -7, 100}, xb[3] = {5, -4, 90};
  for (int i = 0; i < 3; ++i) {
    io::EncodeU32le(ia.data() + 4 * i, static_cast<uint32_t>(xa[i]));
    io::EncodeU32le(ib.data() + 4 * i, static_cast<uint32_t>(xb[i]));
  }
  Side a = MakeSide(ia, {{"i", 0, DType::kInt32, {3}, {1}, 0}});
  Side b = MakeSide(ib, {{"i", 0, DType::kInt32, {3}, {1}, 0}});
  Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(d.ok());
  CHECK_EQ(d->differing, 2u);
  CHECK_EQ(d->first_index, std::vector<int64_t>{1});
  CHECK_EQ(d->max_abs_diff, 10.0);
  CHECK_EQ(d->max_rel_diff, 0.75);

  // float16 1.5 against 1.0 (0x3E00, 0x3C00); bfloat16 2.0 against 2.5 (0x4000, 0x4020).
  std::vector<std::byte> ha(2), hb(2), ba(2), bb(2);
  io::EncodeU16le(ha.data(), 0x3E00);
  io::EncodeU16le(hb.data(), 0x3C00);
  io::EncodeU16le(ba.data(), 0x4000);
  io::EncodeU16le(bb.data(), 0x4020);
  Side h1 = MakeSide(ha, {{"h", 0, DType::kFloat16, {}, {}, 0}});
  Side h2 = MakeSide(hb, {{"h", 0, DType::kFloat16, {}, {}, 0}});
  Result<TensorDiff> hd = DiffTensor(h1.Ref(), h2.Ref(), Exact());
  REQUIRE(hd.ok());
  CHECK_EQ(hd->differing, 1u);
  CHECK(hd->first_index.empty());  // a scalar's index
  CHECK_EQ(hd->max_abs_diff, 0.5);
  Side b1 = MakeSide(ba, {{"b", 0, DType::kBFloat16, {1}, {1}, 0}});
  Side b2 = MakeSide(bb, {{"b", 0, DType::kBFloat16, {1}, {1}, 0}});
  Result<TensorDiff> bd = DiffTensor(b1.Ref(), b2.Ref(), Exact());
  REQUIRE(bd.ok());
  CHECK_EQ(bd->max_abs_diff, 0.5);
  CHECK_EQ(bd->max_rel_diff, 0.2);

  // complex64 (3+4i) against 0: |a-b| = 5, no relative difference (b = 0).
  Side c1 = MakeSide(F32Bytes({3, 4}), {{"c", 0, DType::kComplex64, {1}, {1}, 0}});
  Side c2 = MakeSide(F32Bytes({0, 0}), {{"c", 0, DType::kComplex64, {1}, {1}, 0}});
  Result<TensorDiff> cd = DiffTensor(c1.Ref(), c2.Ref(), CloseOpts(4.9, 0));
  REQUIRE(cd.ok());
  CHECK_EQ(cd->differing, 1u);
  CHECK_EQ(cd->max_abs_diff, 5.0);
  CHECK_EQ(cd->max_rel_diff, 0.0);
  Result<TensorDiff> cd_close = DiffTensor(c1.Ref(), c2.Ref(), CloseOpts(5.0, 0));
  REQUIRE(cd_close.ok());
  CHECK(cd_close->same);
}

TEST_CASE("diff: float8 values decode as their formats say") {
  // Per format: codes and their values (ml_dtypes' tables): 1.0, the largest finite, a
  // subnormal, and NaN/inf codes.
  struct Case {
    DType dtype;
    uint8_t a, b;  // codes
    double abs;    // |value(a) - value(b)|, or -1: b is NaN or inf (not finite)
  };
  const Case cases[] = {
      {DType::kFloat8E4M3FN, 0x38, 0x7E, 447.0},        // 1.0, 448
      {DType::kFloat8E4M3FN, 0x38, 0x01, 1.0 - 1.0 / 512},  // 1.0, 2^-9
      {DType::kFloat8E4M3FN, 0x38, 0x7F, -1},           // NaN
      {DType::kFloat8E5M2, 0x3C, 0x7B, 57343.0},        // 1.0, 57344
      {DType::kFloat8E5M2, 0x3C, 0x7C, -1},             // inf
      {DType::kFloat8E4M3FNUZ, 0x40, 0x7F, 239.0},      // 1.0, 240
      {DType::kFloat8E4M3FNUZ, 0x40, 0x80, -1},         // NaN
      {DType::kFloat8E5M2FNUZ, 0x40, 0xC0, 2.0},        // 1.0, -1.0
      {DType::kFloat8E8M0FNU, 0x7F, 0x81, 3.0},         // 1.0, 4.0
      {DType::kFloat8E8M0FNU, 0x7F, 0xFF, -1},          // NaN
  };
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.dtype));
    CAPTURE(static_cast<int>(c.b));
    Side a = MakeSide({std::byte{c.a}}, {{"f", 0, c.dtype, {1}, {1}, 0}});
    Side b = MakeSide({std::byte{c.b}}, {{"f", 0, c.dtype, {1}, {1}, 0}});
    Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), CloseOpts(0, 0));
    REQUIRE(d.ok());
    CHECK(d->numeric);
    CHECK_EQ(d->differing, 1u);
    CHECK_EQ(d->max_abs_diff, c.abs < 0 ? 0.0 : c.abs);
  }
  // Close by value: float8_e4m3fn 1.0 against float32 1.0625 within 0.1.
  Side f8 = MakeSide({std::byte{0x38}}, {{"f", 0, DType::kFloat8E4M3FN, {1}, {1}, 0}});
  Side f32 = F32Side({1.0625f}, {1}, "f");
  Result<TensorDiff> d = DiffTensor(f8.Ref(), f32.Ref(), CloseOpts(0.1, 0));
  REQUIRE(d.ok());
  CHECK(d->same);
  CHECK_EQ(d->max_abs_diff, 0.0625);
}

TEST_CASE("diff: only compares the names matching a pattern, on both sides") {
  Side a1 = F32Side({1, 2}, {2}, "layer.0.w"), a2 = F32Side({1}, {1}, "layer.1.w"), a3 = F32Side({5}, {1}, "head");
  Side b1 = F32Side({1, 2}, {2}, "layer.0.w"), b2 = F32Side({9}, {1}, "layer.1.w"), b3 = F32Side({7}, {1}, "extra");
  DiffOptions only = Exact();
  only.only = {"layer.0.*", "head"};
  Result<DiffReport> r = DiffTensorSets({a1.Ref(), a2.Ref(), a3.Ref()}, {b1.Ref(), b2.Ref(), b3.Ref()}, only);
  REQUIRE(r.ok());
  REQUIRE_EQ(r->tensors.size(), 1u);  // layer.1.w differs, but is not asked for
  CHECK_EQ(r->tensors[0].name, "layer.0.w");
  CHECK(r->tensors[0].same);
  CHECK_EQ(r->only_a, std::vector<std::string>{"head"});
  CHECK(r->only_b.empty());  // "extra" matches no pattern
  CHECK_EQ(r->different, 0u);
  // Without the patterns the same sets differ (the check above can fail).
  Result<DiffReport> all = DiffTensorSets({a1.Ref(), a2.Ref(), a3.Ref()}, {b1.Ref(), b2.Ref(), b3.Ref()}, Exact());
  REQUIRE(all.ok());
  CHECK_EQ(all->different, 1u);
  CHECK_EQ(all->only_b, std::vector<std::string>{"extra"});
}

TEST_CASE("diff: progress counts both sides' bytes of the names in both, rising to the total") {
  // 64 float32 elements per side in 16-element blocks (buffer 64 B), a
  // pair of different shapes (values never read, counted when passed), and a
  // name on one side only (not counted).
  std::vector<float> v(64, 1.0f);
  Side a1 = F32Side(v, {64}, "big"), a2 = F32Side({1, 2}, {2}, "shape"), a3 = F32Side({1}, {1}, "only_a");
  Side b1 = F32Side(v, {64}, "big"), b2 = F32Side({1, 2}, {1, 2}, "shape");
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  DiffOptions o = Exact(64);
  o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  Result<DiffReport> r = DiffTensorSets({a1.Ref(), a2.Ref(), a3.Ref()}, {b1.Ref(), b2.Ref()}, o);
  REQUIRE(r.ok());
  REQUIRE_FALSE(calls.empty());
  const uint64_t total = 2 * 256 + 2 * 8;
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK_EQ(calls[i].second, total);
    if (i > 0) CHECK_GT(calls[i].first, calls[i - 1].first);
  }
  CHECK_EQ(calls.back().first, total);
  CHECK_GE(calls.size(), 4u);  // "big" reports block by block, not once
}

TEST_CASE("diff: empty tensors are equal; a view past its storage is corrupt; tiny buffers refused") {
  Side a = MakeSide({}, {{"e", 0, DType::kFloat32, {0, 4}, {4, 1}, 0}});
  Side b = MakeSide({}, {{"e", 0, DType::kFloat32, {0, 4}, {4, 1}, 0}});
  Result<TensorDiff> d = DiffTensor(a.Ref(), b.Ref(), Exact());
  REQUIRE(d.ok());
  CHECK(d->same);
  CHECK_EQ(d->numel, 0u);

  Side bad = MakeSide(F32Bytes({1, 2}), {{"x", 0, DType::kFloat32, {3}, {1}, 0}});
  Side good = F32Side({1, 2, 3}, {3}, "x");
  Result<TensorDiff> past = DiffTensor(good.Ref(), bad.Ref(), Exact());
  CHECK_EQ(past.status().code(), Code::kCorrupt);
  CHECK_EQ(past.status().record(), "x");

  CHECK_EQ(DiffTensor(good.Ref(), good.Ref(), Exact(63)).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace zerofold::diff
