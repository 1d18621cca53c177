#include "gather/view_reader.h"

#include <doctest/doctest.h>

#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "support/checkpoint_builder.h"
#include "support/fixtures.h"
#include "torch/read.h"

namespace zerofold::gather {
namespace {

using torch::DType;

// A file of `prefix` bytes, then a storage of n int32 elements holding 0..n-1.
io::MemSource Storage(size_t prefix, uint32_t n) {
  std::vector<std::byte> bytes(prefix + 4 * size_t{n}, std::byte{0xEE});
  for (uint32_t i = 0; i < n; ++i) io::EncodeU32le(bytes.data() + prefix + 4 * i, i);
  return io::MemSource("mem", std::move(bytes));
}

// The element values of a view, in C order, computed directly.
std::vector<uint32_t> Expected(const testing::View& v) {
  std::vector<uint32_t> out;
  std::vector<int64_t> idx(v.shape.size(), 0);
  for (int64_t s : v.shape)
    if (s == 0) return out;
  while (true) {
    int64_t e = v.offset;
    for (size_t d = 0; d < idx.size(); ++d) e += idx[d] * v.stride[d];
    out.push_back(static_cast<uint32_t>(e));
    size_t d = idx.size();
    while (d > 0 && ++idx[d - 1] == v.shape[d - 1]) idx[--d] = 0;
    if (d == 0) return out;
  }
}

// A stored storage whose byte 0 is at `prefix` in the file.
torch::Storage StoredAt(size_t prefix, uint64_t nbytes) {
  static const std::string kKey = "0", kRecord = "archive/data/0";
  torch::Storage s;
  s.key = kKey;
  s.record = kRecord;
  s.data_offset = prefix;
  s.nbytes = s.record_size = nbytes;
  return s;
}

struct Got {
  std::vector<uint32_t> values;
  std::vector<size_t> chunk_sizes;
};

Got Run(Gatherer& g, const io::MemSource& src, size_t prefix, const testing::View& v) {
  torch::Checkpoint ckpt = testing::BuildCheckpoint({0}, {v});
  Got got;
  Status s = g.Gather(src, StoredAt(prefix, src.size() - prefix), ckpt.tensors[0], [&](std::span<const std::byte> chunk) {
    got.chunk_sizes.push_back(chunk.size());
    for (size_t i = 0; i + 4 <= chunk.size(); i += 4) got.values.push_back(io::DecodeU32le(chunk.data() + i));
    return Status::OK();
  });
  REQUIRE(s.ok());
  return got;
}

TEST_CASE("gather reads every layout in C order, whatever the buffer size") {
  const size_t prefix = 13;
  io::MemSource src = Storage(prefix, 4096);
  const testing::View views[] = {
      {"contiguous", 0, DType::kInt32, {7, 9}, {9, 1}, 5},
      {"transposed", 0, DType::kInt32, {64, 64}, {1, 64}, 0},
      {"column", 0, DType::kInt32, {60}, {64}, 3},
      {"stride 2", 0, DType::kInt32, {1000}, {2}, 1},
      {"narrowed rows", 0, DType::kInt32, {50, 3}, {64, 1}, 10},
      {"expanded", 0, DType::kInt32, {5, 300}, {0, 1}, 7},
      {"expanded inner", 0, DType::kInt32, {300, 5}, {1, 0}, 7},
      {"broadcast scalar", 0, DType::kInt32, {4, 4}, {0, 0}, 4095},
      {"permuted 3-d", 0, DType::kInt32, {4, 8, 16}, {1, 512, 4}, 2},
      {"size-1 dims", 0, DType::kInt32, {1, 30, 1, 20}, {999, 20, 77, 1}, 100},
      {"0-dim", 0, DType::kInt32, {}, {}, 4000},
      {"whole storage", 0, DType::kInt32, {4096}, {1}, 0},
  };
  for (size_t buffer : {size_t{64}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
    Gatherer g(buffer);
    for (const testing::View& v : views) {
      CAPTURE(buffer);
      CAPTURE(v.name);
      Got got = Run(g, src, prefix, v);
      CHECK_EQ(got.values, Expected(v));
      for (size_t c : got.chunk_sizes) {
        CHECK_EQ(c % 4, 0u);
        CHECK_LE(c, std::max<size_t>(buffer, 64));
      }
    }
  }
}

TEST_CASE("an empty view emits nothing") {
  io::MemSource src = Storage(0, 16);
  Gatherer g(64);
  Got got = Run(g, src, 0, {"empty", 0, DType::kInt32, {3, 0}, {1, 1}, 99});
  CHECK(got.values.empty());
  CHECK(got.chunk_sizes.empty());
}

TEST_CASE("a view past the end of the file is a read error at its offset") {
  io::MemSource src = Storage(8, 16);  // 8 + 64 bytes
  Gatherer g(64);
  torch::Checkpoint ckpt = testing::BuildCheckpoint({0}, {{"far", 0, DType::kInt32, {4}, {8}, 10}});
  Status s = g.Gather(src, StoredAt(8, 160), ckpt.tensors[0], [](std::span<const std::byte>) { return Status::OK(); });
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.offset(), 80u);  // element 18, at 8 + 72, starts past the 72-byte file
}

TEST_CASE("an emit error stops the gather") {
  io::MemSource src = Storage(0, 4096);
  Gatherer g(64);
  torch::Checkpoint ckpt = testing::BuildCheckpoint({0}, {{"t", 0, DType::kInt32, {4096}, {1}, 0}});
  int calls = 0;
  Status s = g.Gather(src, StoredAt(0, src.size()), ckpt.tensors[0], [&](std::span<const std::byte>) {
    ++calls;
    return Status::IOError("disk full");
  });
  CHECK_EQ(s.code(), Code::kIO);
  CHECK_EQ(calls, 1);
}

// Every view of a checkpoint gathered into one byte string, in tensor order.
std::vector<std::byte> GatherAll(const io::MemSource& src, size_t buffer) {
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(src);
  REQUIRE_MESSAGE(ckpt.ok(), ckpt.status().ToString());
  Gatherer g(buffer);
  std::vector<std::byte> out;
  for (const torch::Tensor& t : ckpt->tensors) {
    Status s = g.Gather(src, ckpt->storages[t.storage], t, [&](std::span<const std::byte> chunk) {
      out.insert(out.end(), chunk.begin(), chunk.end());
      return Status::OK();
    });
    REQUIRE_MESSAGE(s.ok(), s.ToString());
  }
  CHECK(g.Finish().ok());
  return out;
}

TEST_CASE("a deflated archive's views gather as its stored original's") {
  // fixtures/bad/deflated.pt is fixtures/torch/state_dict.pt with every record deflated.
  io::MemSource stored("state_dict.pt", testing::Fixture("torch/state_dict.pt"));
  io::MemSource deflated("deflated.pt", testing::Fixture("bad/deflated.pt"));
  for (size_t buffer : {size_t{64}, size_t{4096}}) {
    CAPTURE(buffer);
    std::vector<std::byte> want = GatherAll(stored, buffer);
    CHECK(want.size() > 300);
    CHECK(GatherAll(deflated, buffer) == want);
  }
}

TEST_CASE("a deflated record whose CRC-32 fails is refused by Finish") {
  std::vector<std::byte> bytes = testing::Fixture("bad/deflated.pt");
  io::MemSource clean("deflated.pt", bytes);
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(clean);
  REQUIRE(ckpt.ok());
  // The central directory's CRC-32 of the first storage's record, flipped:
  // the ReadCheckpoint result still describes the record, its end fails.
  torch::Storage s = ckpt->storages[ckpt->tensors[0].storage];
  REQUIRE_EQ(s.method, 8);
  s.crc32 ^= 1;
  Gatherer g(64);
  torch::Tensor first = ckpt->tensors[0];
  Status gathered = g.Gather(clean, s, first, [](std::span<const std::byte>) { return Status::OK(); });
  Status finished = gathered.ok() ? g.Finish() : gathered;
  CHECK_EQ(finished.code(), Code::kCorrupt);
  CHECK_EQ(finished.record(), s.record);
  CHECK_EQ(finished.path(), "deflated.pt");
}

}  // namespace
}  // namespace zerofold::gather
