// The assembler on tilings of every shape DCP writes (dim 0, dim 1, both,
// uneven, 0-dim, a chunk stored transposed, a zstd chunk) and on ZeRO's flat
// pieces, with buffers of a few elements so every piece spans many refills.
// Element values are their C-order index in the full tensor, so the output
// is correct exactly when it counts 0, 1, 2, ...
#include "gather/assemble.h"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io/mem.h"
#include "io/zstd_stream.h"

namespace zerofold::gather {
namespace {

struct Box {
  std::vector<int64_t> offsets, sizes;
  bool transposed = false;  // 2-D only: stored column-major
  bool zstd = false;
};

// The full tensor's C-order index of the box element at `local`.
int32_t GlobalIndex(const std::vector<int64_t>& grid, const Box& b, const std::vector<int64_t>& local) {
  int64_t index = 0;
  for (size_t d = 0; d < grid.size(); ++d) index = index * grid[d] + b.offsets[d] + local[d];
  return static_cast<int32_t>(index);
}

// Lays every box's int32 values out in one source (each after 13 bytes of
// padding, zstd ones compressed behind a 5-byte prefix) and builds the plan.
struct Built {
  std::unique_ptr<io::MemSource> source;
  std::vector<SourceFile> sources;
  GatherTensor tensor;
};

Built Build(const std::vector<int64_t>& grid, const std::vector<Box>& boxes) {
  Built out;
  std::vector<std::byte> file;
  out.tensor.name = std::string(1, 't');
  out.tensor.dtype = torch::DType::kInt32;
  out.tensor.shape = grid;
  out.tensor.grid = grid;
  for (const Box& b : boxes) {
    const size_t rank = grid.size();
    int64_t n = 1;
    for (int64_t s : b.sizes) n *= s;
    std::vector<int32_t> values(static_cast<size_t>(n));
    std::vector<int64_t> strides(rank, 1);
    if (b.transposed) {
      strides = {1, b.sizes[0]};
    } else {
      for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * b.sizes[d];
    }
    std::vector<int64_t> local(rank, 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t rest = k, at = 0;
      for (size_t d = rank; d-- > 0;) {
        local[d] = rest % b.sizes[d];
        rest /= b.sizes[d];
        at += local[d] * strides[d];
      }
      values[static_cast<size_t>(at)] = GlobalIndex(grid, b, local);
    }
    std::vector<std::byte> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    Piece p;
    p.offsets = b.offsets;
    p.sizes = b.sizes;
    p.record = "box";
    p.dtype = torch::DType::kInt32;
    p.storage_nbytes = bytes.size();
    p.strides = strides;
    file.resize(file.size() + 13);
    if (b.zstd) {
      io::MemSink sink;
      auto z = io::ZstdSink::Open(&sink);
      REQUIRE(z.ok());
      std::vector<std::byte> prefix(5, std::byte{0x55});
      REQUIRE((*z)->Append(prefix).ok());
      REQUIRE((*z)->Append(bytes).ok());
      REQUIRE((*z)->Finish().ok());
      p.transform = Transform::kZstd;
      p.frame_offset = file.size();
      p.frame_length = sink.bytes().size();
      p.data_offset = prefix.size();
      file.insert(file.end(), sink.bytes().begin(), sink.bytes().end());
    } else {
      p.data_offset = file.size();
      file.insert(file.end(), bytes.begin(), bytes.end());
    }
    out.tensor.pieces.push_back(std::move(p));
  }
  out.source = std::make_unique<io::MemSource>("f", std::move(file));
  out.sources.push_back({"f", out.source.get()});
  return out;
}

// Assembles with `buffer` bytes and checks the output counts 0, 1, 2, ...
void CheckCounts(const std::vector<int64_t>& grid, const std::vector<Box>& boxes, size_t buffer) {
  Built b = Build(grid, boxes);
  TensorAssembler assembler(b.sources, buffer);
  std::vector<std::byte> got;
  size_t calls = 0;
  Status s = assembler.Assemble(b.tensor, [&](std::span<const std::byte> bytes) {
    CHECK_LE(bytes.size(), std::max<size_t>(buffer, 16));
    got.insert(got.end(), bytes.begin(), bytes.end());
    ++calls;
    return Status::OK();
  });
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  const uint64_t numel = NumelOf(grid);
  REQUIRE_EQ(got.size(), numel * 4);
  for (uint64_t i = 0; i < numel; ++i) {
    int32_t v;
    std::memcpy(&v, got.data() + i * 4, 4);
    if (v != static_cast<int32_t>(i)) {
      FAIL("element " << i << " is " << v);
      break;
    }
  }
  if (numel * 4 > buffer) CHECK_GT(calls, 1u);
  // Every byte of every piece read once: no window reads a byte twice.
  CHECK_EQ(assembler.bytes_read(), numel * 4);
}

TEST_CASE("Assemble: DCP tilings with buffers of a few elements") {
  struct Case {
    const char* name;
    std::vector<int64_t> grid;
    std::vector<Box> boxes;
  } cases[] = {
      {"dim 0, 10 rows over 4 ranks", {10, 3}, {{{0, 0}, {3, 3}}, {{3, 0}, {3, 3}}, {{6, 0}, {3, 3}}, {{9, 0}, {1, 3}}}},
      {"dim 1, 7 columns over 3 ranks", {4, 7}, {{{0, 0}, {4, 3}}, {{0, 3}, {4, 3}}, {{0, 6}, {4, 1}}}},
      {"2x2 blocks, uneven, listed out of order",
       {5, 7},
       {{{3, 4}, {2, 3}}, {{0, 0}, {3, 4}}, {{3, 0}, {2, 4}}, {{0, 4}, {3, 3}}}},
      {"dim 2 of a 3-D tensor", {2, 3, 8}, {{{0, 0, 0}, {2, 3, 3}}, {{0, 0, 3}, {2, 3, 3}}, {{0, 0, 6}, {2, 3, 2}}}},
      {"0-dim", {}, {{{}, {}}}},
      {"one rank holds all", {6, 4}, {{{0, 0}, {6, 4}}}},
      {"empty chunks of ranks that hold none", {2, 5}, {{{0, 0}, {1, 5}}, {{1, 0}, {1, 5}}, {{2, 0}, {0, 5}}}},
      {"a chunk stored transposed", {6, 5}, {{{0, 0}, {6, 2}, true}, {{0, 2}, {6, 3}}}},
      {"a zstd chunk beside a plain one", {9, 4}, {{{0, 0}, {5, 4}, false, true}, {{5, 0}, {4, 4}}}},
      {"zstd chunks on dim 1", {3, 6}, {{{0, 0}, {3, 2}, false, true}, {{0, 2}, {3, 4}, false, true}}},
      {"a zstd chunk stored transposed", {6, 5}, {{{0, 0}, {6, 2}, true, true}, {{0, 2}, {6, 3}, true, false}}},
      {"ZeRO: ranges of the flattened tensor", {30}, {{{0}, {7}}, {{7}, {16}}, {{23}, {7}}}},
  };
  for (const Case& c : cases) {
    for (size_t buffer : {16, 20, 64, 100, 4096}) {
      CAPTURE(c.name);
      CAPTURE(buffer);
      CheckCounts(c.grid, c.boxes, buffer);
    }
  }
}

TEST_CASE("Assemble converts each piece to the output dtype in place") {
  Built b = Build({4, 2}, {{{0, 0}, {4, 1}}, {{0, 1}, {4, 1}}});
  // Re-type the pieces: int32 values 0..7 written as float16 in a new source.
  std::vector<std::byte> file;
  for (Piece& p : b.tensor.pieces) {
    std::vector<int32_t> v(4);
    REQUIRE(ReadExactAt(*b.source, p.data_offset, std::as_writable_bytes(std::span(v))).ok());
    p.data_offset = file.size();
    p.dtype = torch::DType::kFloat16;
    p.storage_nbytes = 8;
    for (int32_t x : v) {
      // float16 of small ints: exponent 15 + floor(log2 x), 10 mantissa bits.
      uint16_t h = 0;
      if (x > 0) {
        int e = 31 - __builtin_clz(static_cast<unsigned>(x));
        h = static_cast<uint16_t>(((15 + e) << 10) | ((x - (1 << e)) << (10 - e)));
      }
      file.push_back(std::byte(h & 0xFF));
      file.push_back(std::byte(h >> 8));
    }
  }
  io::MemSource src("f16", std::move(file));
  std::vector<SourceFile> sources = {{"f16", &src}};
  b.tensor.dtype = torch::DType::kFloat32;
  TensorAssembler assembler(sources, 16);
  std::vector<float> got;
  REQUIRE(assembler.Assemble(b.tensor, [&](std::span<const std::byte> bytes) {
    for (size_t i = 0; i < bytes.size(); i += 4) {
      float f;
      std::memcpy(&f, bytes.data() + i, 4);
      got.push_back(f);
    }
    return Status::OK();
  }).ok());
  CHECK_EQ(got, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("Assemble: a source shorter than its pieces is corrupt, naming file and record") {
  Built b = Build({4, 3}, {{{0, 0}, {2, 3}}, {{2, 0}, {2, 3}}});
  std::vector<std::byte> cut = b.source->bytes();
  cut.resize(cut.size() - 4);
  io::MemSource shorter("short.distcp", std::move(cut));
  std::vector<SourceFile> sources = {{"short.distcp", &shorter}};
  TensorAssembler assembler(sources, 16);
  Status s = assembler.Assemble(b.tensor, [](std::span<const std::byte>) { return Status::OK(); });
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), "short.distcp");
  CHECK_EQ(s.record(), "box");
}

TEST_CASE("Assemble refuses pieces that do not tile the grid (kInternal: the planner checks)") {
  Built b = Build({4, 3}, {{{0, 0}, {2, 3}}, {{1, 0}, {2, 3}}});
  TensorAssembler assembler(b.sources, 64);
  Status s = assembler.Assemble(b.tensor, [](std::span<const std::byte>) { return Status::OK(); });
  CHECK_EQ(s.code(), Code::kInternal);
}

}  // namespace
}  // namespace zerofold::gather
