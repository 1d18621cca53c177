#include "verify/verify.h"

#include <doctest/doctest.h>
#include <xxhash.h>

#include <algorithm>  // before io/mem.h, which uses std::min without including it
#include <cstring>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem.h"
#include "io/mem_env.h"
#include "rewrite/shrink.h"
#include "support/fixtures.h"
#include "torch/read.h"

namespace zerofold::verify {
namespace {

using testing::Fixture;

using torch::DType;

constexpr uint64_t kDataOffset = 100;  // storage bytes start here in the test file

// A file of 100 header bytes then a 256-byte storage holding 0, 1, 2, ...
// (mod 251, so neighbouring elements of every dtype differ), and a
// checkpoint naming it.
struct TestFile {
  std::vector<std::byte> bytes;
  torch::Checkpoint ckpt;
};

TestFile MakeFile(uint64_t storage_bytes = 256) {
  TestFile f;
  f.bytes.assign(kDataOffset, std::byte{0xee});
  for (uint64_t i = 0; i < storage_bytes; ++i) f.bytes.push_back(std::byte(i % 251));
  torch::Storage s{};
  s.key = "0";
  s.dtype = DType::kFloat32;
  s.nbytes = storage_bytes;
  s.record = "archive/data/0";
  s.data_offset = kDataOffset;
  s.record_size = storage_bytes;
  f.ckpt.storages.push_back(s);
  return f;
}

torch::Tensor View(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> stride,
                   int64_t offset) {
  torch::Tensor t{};
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.stride = std::move(stride);
  t.storage_offset = offset;
  return t;
}

// The logical bytes gathered the naive way: every index in row-major order,
// one element at a time.
std::vector<std::byte> Gather(const TestFile& f, const torch::Tensor& t) {
  const size_t item = torch::Info(t.dtype).itemsize;
  std::vector<std::byte> out;
  if (t.numel() == 0) return out;
  std::vector<int64_t> index(t.shape.size(), 0);
  for (;;) {
    int64_t e = t.storage_offset;
    for (size_t k = 0; k < index.size(); ++k) e += index[k] * t.stride[k];
    const std::byte* p = f.bytes.data() + kDataOffset + e * item;
    out.insert(out.end(), p, p + item);
    size_t k = index.size();
    while (k > 0 && ++index[k - 1] == t.shape[k - 1]) index[--k] = 0;
    if (k == 0) break;
  }
  return out;
}

torch::Hash128 Xxh3(const std::vector<std::byte>& b) {
  XXH128_hash_t h = XXH3_128bits(b.data(), b.size());
  return torch::Hash128{h.low64, h.high64};
}

struct ViewCase {
  const char* name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t offset;
  size_t expected_bytes;
};

const ViewCase kViews[] = {
    {"contiguous", DType::kFloat32, {4, 8}, {8, 1}, 0, 128},
    {"contiguous at an offset", DType::kFloat32, {3, 5}, {5, 1}, 7, 60},
    {"transposed", DType::kFloat32, {8, 4}, {1, 8}, 0, 128},
    {"column", DType::kFloat32, {6}, {8}, 1, 24},
    {"stride 2", DType::kInt16, {40}, {2}, 3, 80},
    {"expand rows (0, 1)", DType::kFloat32, {5, 4}, {0, 1}, 2, 80},
    {"expand all (0, 0)", DType::kFloat64, {3, 7}, {0, 0}, 1, 168},
    {"expand columns (1, 0)", DType::kFloat32, {4, 3}, {1, 0}, 0, 48},
    {"permuted 3-D", DType::kFloat16, {2, 3, 4}, {1, 8, 2}, 5, 48},
    {"size-1 dims with odd strides", DType::kFloat32, {1, 5, 1}, {999, 1, 12345}, 3, 20},
    {"0-dim", DType::kInt64, {}, {}, 9, 8},
    {"empty", DType::kFloat32, {0, 4}, {4, 1}, 60, 0},
    {"empty at the storage end", DType::kFloat32, {3, 0}, {1, 1}, 64, 0},
    {"rows of runs", DType::kUInt8, {5, 30}, {50, 1}, 4, 150},
    {"complex128 pairs", DType::kComplex128, {2, 3}, {1, 4}, 2, 96},
    {"bool", DType::kBool, {256}, {1}, 0, 256},
};

TEST_CASE("TensorDigest hashes the logical bytes in row-major order") {
  TestFile f = MakeFile();
  io::MemSource src("t.pt", f.bytes);
  for (size_t buffer_size : {size_t{64}, size_t{100}, size_t{4096}}) {
    std::vector<std::byte> buffer(buffer_size);
    for (const ViewCase& c : kViews) {
      CAPTURE(c.name);
      CAPTURE(buffer_size);
      torch::Tensor t = View(c.name, c.dtype, c.shape, c.stride, c.offset);
      std::vector<std::byte> logical = Gather(f, t);
      REQUIRE_EQ(logical.size(), c.expected_bytes);
      Result<torch::Hash128> h = torch::TensorDigest(src, f.ckpt, t, buffer);
      REQUIRE(h.ok());
      CHECK_EQ(h->Hex(), Xxh3(logical).Hex());
    }
  }
}

TEST_CASE("equal values in different layouts have equal digests") {
  // The same 2x3 float32 matrix stored row-major and transposed.
  TestFile f = MakeFile(48);
  const float rows[6] = {1, 2, 3, 4, 5, 6};
  const float cols[6] = {1, 4, 2, 5, 3, 6};
  std::memcpy(f.bytes.data() + kDataOffset, rows, 24);
  std::memcpy(f.bytes.data() + kDataOffset + 24, cols, 24);
  io::MemSource src("t.pt", f.bytes);
  std::vector<std::byte> buffer(64);
  torch::Tensor a = View("a", DType::kFloat32, {2, 3}, {3, 1}, 0);
  torch::Tensor b = View("b", DType::kFloat32, {2, 3}, {1, 2}, 6);
  CHECK_EQ(torch::TensorDigest(src, f.ckpt, a, buffer).value(), torch::TensorDigest(src, f.ckpt, b, buffer).value());
  torch::Tensor c = View("c", DType::kFloat32, {3, 2}, {2, 1}, 6);  // the transposed matrix's rows
  CHECK_NE(torch::TensorDigest(src, f.ckpt, a, buffer).value(), torch::TensorDigest(src, f.ckpt, c, buffer).value());
}

TEST_CASE("the digest of no bytes is xxh3-128 of the empty string") {
  TestFile f = MakeFile();
  io::MemSource src("t.pt", f.bytes);
  std::vector<std::byte> buffer(64);
  Result<torch::Hash128> h = torch::TensorDigest(src, f.ckpt, View("e", DType::kFloat32, {0}, {1}, 0), buffer);
  REQUIRE(h.ok());
  CHECK_EQ(h->Hex(), "99aa06d3014798d86001c324468d497f");
}

TEST_CASE("TensorDigest errors name the tensor, the record, the path and the offset") {
  TestFile f = MakeFile();
  std::vector<std::byte> buffer(64);
  io::MemSource src("t.pt", f.bytes);

  // A view past its storage: the tensor is the record.
  Result<torch::Hash128> past = torch::TensorDigest(src, f.ckpt, View("w", DType::kFloat32, {65}, {1}, 0), buffer);
  CHECK_EQ(past.status().code(), Code::kCorrupt);
  CHECK_EQ(past.status().record(), "w");
  CHECK_EQ(past.status().message(), "view ends at byte 260 of storage 0, which holds 256 bytes");

  // A negative stride (torch never writes one) is refused, not walked.
  Result<torch::Hash128> negative = torch::TensorDigest(src, f.ckpt, View("n", DType::kFloat32, {4}, {-1}, 3), buffer);
  CHECK_EQ(negative.status().code(), Code::kCorrupt);
  CHECK_EQ(negative.status().record(), "n");

  // The file ends inside the storage: the storage record and the offset.
  std::vector<std::byte> cut(f.bytes.begin(), f.bytes.begin() + kDataOffset + 50);
  io::MemSource short_src("cut.pt", cut);
  Result<torch::Hash128> truncated = torch::TensorDigest(short_src, f.ckpt, View("x", DType::kFloat32, {64}, {1}, 0), buffer);
  CHECK_EQ(truncated.status().code(), Code::kCorrupt);
  CHECK_EQ(truncated.status().path(), "cut.pt");
  CHECK_EQ(truncated.status().record(), "archive/data/0");
  CHECK_EQ(truncated.status().offset(), kDataOffset + 50);

  // Too small a buffer.
  std::vector<std::byte> tiny(torch::kMinDigestBuffer - 1);
  CHECK_EQ(torch::TensorDigest(src, f.ckpt, View("x", DType::kFloat32, {4}, {1}, 0), tiny).status().code(),
           Code::kInvalidArgument);
}

TEST_CASE("packed sub-byte tensors hash the bytes holding their elements") {
  TestFile f = MakeFile();
  io::MemSource src("t.pt", f.bytes);
  std::vector<std::byte> buffer(64);
  // 5 quint4x2 elements from element 4: bytes 2, 3 and 4 (half of byte 4).
  torch::Tensor q = View("q", DType::kQUInt4x2, {5}, {1}, 4);
  Result<torch::Hash128> h = torch::TensorDigest(src, f.ckpt, q, buffer);
  REQUIRE(h.ok());
  std::vector<std::byte> held(f.bytes.begin() + kDataOffset + 2, f.bytes.begin() + kDataOffset + 5);
  CHECK_EQ(h->Hex(), Xxh3(held).Hex());
  // 6 quint2x4 elements as a 2x3 matrix: bytes 0 and 1.
  torch::Tensor m = View("m", DType::kQUInt2x4, {2, 3}, {3, 1}, 0);
  std::vector<std::byte> two(f.bytes.begin() + kDataOffset, f.bytes.begin() + kDataOffset + 2);
  CHECK_EQ(torch::TensorDigest(src, f.ckpt, m, buffer).value().Hex(), Xxh3(two).Hex());
  // Layouts torch never writes are refused, not guessed.
  for (const torch::Tensor& t : {View("mid-byte", DType::kQUInt4x2, {4}, {1}, 1),
                                 View("strided", DType::kQUInt4x2, {4}, {2}, 0),
                                 View("transposed", DType::kQUInt2x4, {2, 3}, {1, 2}, 0)}) {
    CAPTURE(t.name);
    Status s = torch::TensorDigest(src, f.ckpt, t, buffer).status();
    CHECK_EQ(s.code(), Code::kUnsupported);
    CHECK_EQ(s.record(), t.name);
  }
  CHECK_EQ(torch::TensorDigest(src, f.ckpt, View("mid-byte", DType::kQUInt4x2, {4}, {1}, 1), buffer).status().message(),
           "packed quint4x2 view of shape [4], stride [1], offset 1 is not contiguous from a byte boundary");
}

TEST_CASE("TensorDigest passes read errors up with the path and record") {
  TestFile f = MakeFile();
  io::MemEnv mem;
  mem.SetFile("t.pt", f.bytes);
  io::FaultEnv fault(&mem);
  std::unique_ptr<RandomSource> src = fault.OpenRandom("t.pt").value();
  std::vector<std::byte> buffer(64);
  torch::Tensor t = View("x", DType::kFloat32, {8, 8}, {1, 8}, 0);  // 2 window refills of 32 bytes at least
  REQUIRE(torch::TensorDigest(*src, f.ckpt, t, buffer).ok());
  const uint64_t reads = fault.reads();
  REQUIRE_GE(reads, 2u);
  for (uint64_t n = 1; n <= reads; ++n) {
    CAPTURE(n);
    fault.Reset();
    fault.FailRead(n);
    Result<torch::Hash128> h = torch::TensorDigest(*src, f.ckpt, t, buffer);
    CHECK_EQ(h.status().code(), Code::kIO);
    CHECK_EQ(h.status().path(), "t.pt");
    CHECK_EQ(h.status().record(), "archive/data/0");
  }
}


TEST_CASE("VerifyTensors accepts a shrunk file and names the tensor whose byte changed") {
  io::MemEnv mem;
  mem.SetFile("views.pt", Fixture("torch/views.pt"));
  rewrite::ShrinkOptions options;
  options.verify = true;
  Result<rewrite::ShrinkReport> r = rewrite::ShrinkFile(&mem, "views.pt", "small.pt", options);
  REQUIRE(r.ok());
  CHECK(r->verified);
  CHECK_EQ(r->verified_tensors, r->tensors);
  uint64_t nbytes = 0;
  for (const auto& [name, n] : r->tensor_nbytes) nbytes += n;
  CHECK_EQ(r->verified_bytes, nbytes);

  // Change one byte of each output storage in turn: VerifyTensors names the
  // first tensor (in pickle order) that reads it.
  std::vector<std::byte> small = mem.GetFile("small.pt").value();
  io::MemSource in("views.pt", mem.GetFile("views.pt").value());
  torch::Checkpoint in_ckpt = torch::ReadCheckpoint(in).value();
  torch::Checkpoint out_ckpt;
  {
    io::MemSource out("small.pt", small);
    out_ckpt = torch::ReadCheckpoint(out).value();
  }
  std::vector<std::byte> buffer(4096);
  size_t caught = 0;
  for (const torch::Storage& s : out_ckpt.storages) {
    if (s.nbytes == 0) continue;
    // The last byte a view reads (a storage kept whole may hold bytes none reads).
    uint64_t last = 0;
    for (const torch::Tensor& t : out_ckpt.tensors)
      if (&out_ckpt.storages[t.storage] == &s) last = std::max(last, torch::ViewExtent(t).value().end);
    REQUIRE_GT(last, 0u);
    std::vector<std::byte> bad = small;
    bad[s.data_offset + last - 1] ^= std::byte{0x40};
    io::MemSource out("small.pt", bad);
    Result<VerifyReport> v = VerifyTensors(in, in_ckpt, out, out_ckpt, buffer);
    CAPTURE(s.key);
    REQUIRE_FALSE(v.ok());
    CHECK_EQ(v.status().code(), Code::kCorrupt);
    CHECK_EQ(v.status().path(), "small.pt");
    // The named tensor's view covers the changed byte.
    const torch::Tensor* named = nullptr;
    for (const torch::Tensor& t : out_ckpt.tensors)
      if (t.name == v.status().record()) named = &t;
    REQUIRE(named != nullptr);
    CHECK_EQ(&out_ckpt.storages[named->storage], &s);
    CHECK_EQ(torch::ViewExtent(*named).value().end, last);
    caught++;
  }
  CHECK_EQ(caught, out_ckpt.storages.size());
}

TEST_CASE("VerifyTensors names what differs") {
  TestFile f = MakeFile();
  io::MemSource src("t.pt", f.bytes);
  torch::Checkpoint a = f.ckpt, b = f.ckpt;
  a.tensors.push_back(View("x", DType::kFloat32, {2, 4}, {4, 1}, 0));
  b.tensors.push_back(View("x", DType::kFloat32, {2, 4}, {4, 1}, 1));
  std::vector<std::byte> buffer(64);
  Status s = VerifyTensors(src, a, src, b, buffer).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.ToString(),
           "t.pt: x: corrupt: tensor differs from the input: xxh3-128 of its 32 bytes is " +
               torch::TensorDigest(src, b, b.tensors[0], buffer).value().Hex() + ", input " +
               torch::TensorDigest(src, a, a.tensors[0], buffer).value().Hex());
  b.tensors[0] = View("x", DType::kFloat32, {2, 4}, {1, 2}, 0);
  CHECK_EQ(VerifyTensors(src, a, src, b, buffer).status().message(),
           "tensor differs from the input: stride [1, 2], input [4, 1]");
  b.tensors[0] = View("y", DType::kFloat32, {2, 4}, {4, 1}, 0);
  CHECK_EQ(VerifyTensors(src, a, src, b, buffer).status().message(),
           "tensor differs from the input: the output has \"y\" in its place");
  b.tensors.clear();
  CHECK_EQ(VerifyTensors(src, a, src, b, buffer).status().message(), "holds 0 tensors, the input 1");
  b.tensors.push_back(a.tensors[0]);
  Result<VerifyReport> same = VerifyTensors(src, a, src, b, buffer);
  REQUIRE(same.ok());
  CHECK_EQ(same->tensors, 1u);
  CHECK_EQ(same->bytes, 32u);
}

}  // namespace
}  // namespace zerofold::verify
