// Read-ahead (gather/read_ahead.h): where each range of a plan is placed in
// the output, the order and horizon of the hints, and the assembler moving
// them along; and the window pool the assembler's piece readers share.
#include "gather/read_ahead.h"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gather/assemble.h"
#include "gather/piece_reader.h"
#include "io/mem.h"

namespace zerofold::gather {
namespace {

// A MemSource that records every WillNeed hint.
class HintedSource final : public RandomSource {
 public:
  HintedSource(std::string name, std::vector<std::byte> bytes) : base_(std::move(name), std::move(bytes)) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override { return base_.ReadAt(offset, dst); }
  void WillNeed(uint64_t offset, uint64_t length) const override { hints.emplace_back(offset, length); }
  uint64_t size() const override { return base_.size(); }
  const std::string& name() const override { return base_.name(); }

  mutable std::vector<std::pair<uint64_t, uint64_t>> hints;

 private:
  io::MemSource base_;
};

// An int32 piece: a contiguous box at data_offset of `file`.
Piece Int32Piece(uint32_t file, std::vector<int64_t> offsets, std::vector<int64_t> sizes, uint64_t data_offset) {
  Piece p;
  p.file = file;
  p.offsets = std::move(offsets);
  p.sizes = std::move(sizes);
  p.dtype = torch::DType::kInt32;
  p.data_offset = data_offset;
  p.strides.assign(p.sizes.size(), 1);
  for (size_t d = p.sizes.size(); d-- > 1;) p.strides[d - 1] = p.strides[d] * p.sizes[d];
  p.storage_nbytes = NumelOf(p.sizes) * 4;
  return p;
}

GatherTensor Int32Tensor(std::string name, std::vector<int64_t> grid, std::vector<Piece> pieces) {
  GatherTensor t;
  t.name = std::move(name);
  t.dtype = torch::DType::kInt32;
  t.shape = grid;
  t.grid = std::move(grid);
  t.pieces = std::move(pieces);
  return t;
}

TEST_CASE("SpanInGrid: a box's first element and one past its last in C order") {
  const std::vector<int64_t> grid{4, 6};
  Piece p = Int32Piece(0, {1, 2}, {2, 3}, 0);
  GridSpan s = SpanInGrid(grid, p);
  CHECK_EQ(s.first, 8u);   // (1, 2)
  CHECK_EQ(s.end, 17u);    // (2, 4) + 1
  Piece whole = Int32Piece(0, {0, 0}, {4, 6}, 0);
  CHECK_EQ(SpanInGrid(grid, whole).first, 0u);
  CHECK_EQ(SpanInGrid(grid, whole).end, 24u);
}

// Tensor a [4, 8] int32 split on dim 1 (two [4, 4] pieces, files 0 and 1);
// tensor b [4] in one piece, a zstd piece (not hinted) and a sparse view
// (a column of a [4, 4] storage: extent 52 bytes for 16 read, not hinted).
struct TwoTensors {
  GatherTensor a, b;
  TwoTensors() {
    a = Int32Tensor("a", {4, 8}, {Int32Piece(0, {0, 0}, {4, 4}, 100), Int32Piece(1, {0, 4}, {4, 4}, 200)});
    Piece zstd = Int32Piece(0, {2}, {2}, 0);
    zstd.transform = Transform::kZstd;
    Piece column = Int32Piece(1, {4}, {4}, 300);
    column.strides = {4};
    column.storage_nbytes = 64;
    b = Int32Tensor("b", {8}, {Int32Piece(0, {0}, {2}, 400), zstd, column});
  }
};

TEST_CASE("PlanReadAhead places each granule at its share of its piece's span") {
  TwoTensors t;
  const GatherTensor* order[] = {&t.a, &t.b};
  std::vector<AheadRange> got = PlanReadAhead(order, 32);
  // a's pieces (64 bytes each, 2 granules) span output bytes [0, 112) and
  // [16, 128): granule 1 of each is read after half its span (56 bytes).
  // b starts at output byte 128; its contiguous piece is one granule.
  std::vector<AheadRange> want{
      {0, 100, 32, 0}, {1, 200, 32, 16}, {0, 132, 32, 56}, {1, 232, 32, 72}, {0, 400, 8, 128},
  };
  CHECK_EQ(got, want);
  // A granule larger than every piece: one range a piece.
  std::vector<AheadRange> whole = PlanReadAhead(order, 1 << 20);
  REQUIRE_EQ(whole.size(), 3u);
  CHECK_EQ(whole[0], AheadRange{0, 100, 64, 0});
  CHECK_EQ(whole[1], AheadRange{1, 200, 64, 16});
  CHECK_EQ(whole[2], AheadRange{0, 400, 8, 128});
}

TEST_CASE("ReadAhead hints each range once, in order, up to its horizon") {
  TwoTensors t;
  HintedSource f0("f0", std::vector<std::byte>(512)), f1("f1", std::vector<std::byte>(512));
  std::vector<SourceFile> sources{{"f0", &f0}, {"f1", &f1}};
  const GatherTensor* order[] = {&t.a, &t.b};
  ReadAhead ahead(sources, PlanReadAhead(order, 32), 60);
  using Hints = std::vector<std::pair<uint64_t, uint64_t>>;
  ahead.Advance(0);  // horizon 60: needed at 0, 16, 56
  CHECK_EQ(ahead.hinted(), 3u);
  CHECK_EQ(f0.hints, Hints{{100, 32}, {132, 32}});
  CHECK_EQ(f1.hints, Hints{{200, 32}});
  ahead.Advance(12);  // horizon 72: 72 is not below it
  CHECK_EQ(ahead.hinted(), 3u);
  ahead.Advance(13);
  CHECK_EQ(ahead.hinted(), 4u);
  CHECK_EQ(f1.hints, Hints{{200, 32}, {232, 32}});
  ahead.Advance(0);  // going back hints nothing again
  CHECK_EQ(ahead.hinted(), 4u);
  ahead.Advance(1000);
  CHECK_EQ(ahead.hinted(), 5u);
  CHECK_EQ(f0.hints, Hints{{100, 32}, {132, 32}, {400, 8}});
  ahead.Advance(2000);
  CHECK_EQ(f0.hints.size() + f1.hints.size(), 5u);
}

// Two tensors in one file, each value its C-order index in its tensor.
struct Assembled {
  std::unique_ptr<HintedSource> file;
  std::vector<SourceFile> sources;
  GatherTensor a, b;
  Assembled() {
    std::vector<std::byte> bytes;
    auto put = [&](const std::vector<int32_t>& v) {
      const uint64_t at = bytes.size();
      bytes.resize(at + v.size() * 4);
      std::memcpy(bytes.data() + at, v.data(), v.size() * 4);
      return at;
    };
    // a [2, 4] split on dim 1: rows {0 1 | 2 3}, {4 5 | 6 7}.
    uint64_t left = put({0, 1, 4, 5});
    uint64_t right = put({2, 3, 6, 7});
    uint64_t whole = put({0, 1, 2});
    a = Int32Tensor("a", {2, 4}, {Int32Piece(0, {0, 0}, {2, 2}, left), Int32Piece(0, {0, 2}, {2, 2}, right)});
    b = Int32Tensor("b", {3}, {Int32Piece(0, {0}, {3}, whole)});
    file = std::make_unique<HintedSource>("f", std::move(bytes));
    sources.push_back({"f", file.get()});
  }
};

void CheckAssembles(TensorAssembler& assembler, const GatherTensor& t) {
  std::vector<int32_t> got;
  Status s = assembler.Assemble(t, [&](std::span<const std::byte> bytes) {
    const size_t at = got.size();
    got.resize(at + bytes.size() / 4);
    std::memcpy(got.data() + at, bytes.data(), bytes.size());
    return Status::OK();
  });
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  REQUIRE_EQ(got.size(), NumelOf(t.shape));
  for (size_t i = 0; i < got.size(); ++i) CHECK_EQ(got[i], static_cast<int32_t>(i));
}

TEST_CASE("TensorAssembler::ReadAheadFor hints the tensors it expects, in order") {
  Assembled x;
  using Hints = std::vector<std::pair<uint64_t, uint64_t>>;
  {
    TensorAssembler assembler(x.sources, 16);
    assembler.ReadAheadFor({&x.a, &x.b});
    CheckAssembles(assembler, x.a);
    CheckAssembles(assembler, x.b);
    // Everything lies within kReadAheadBytes: hinted when a began, in the
    // order it is needed.
    CHECK_EQ(x.file->hints, Hints{{0, 16}, {16, 16}, {32, 12}});
  }
  x.file->hints.clear();
  {
    // A tensor other than the next expected gets no hints, and the
    // expected one still gets its own after it.
    TensorAssembler assembler(x.sources, 16);
    assembler.ReadAheadFor({&x.b});
    CheckAssembles(assembler, x.a);
    CHECK(x.file->hints.empty());
    CheckAssembles(assembler, x.b);
    CHECK_EQ(x.file->hints, Hints{{32, 12}});
  }
}

TEST_CASE("WindowPool lends windows again without allocating, and Keep frees what is not needed") {
  WindowPool pool;
  WindowPool::Window w = pool.Take(100);
  REQUIRE_GE(w.size, 100u);
  std::byte* first = w.bytes.get();
  pool.Give(std::move(w));
  CHECK_EQ(pool.idle_count(), 1u);
  WindowPool::Window again = pool.Take(50);  // smaller: the same memory
  CHECK_EQ(again.bytes.get(), first);
  CHECK_EQ(again.size, 100u);
  CHECK_EQ(pool.idle_count(), 0u);
  WindowPool::Window other = pool.Take(40);  // none idle: a new one
  CHECK_NE(other.bytes.get(), first);
  pool.Give(std::move(again));
  WindowPool::Window grown = pool.Take(300);  // idle one too small: regrown
  CHECK_EQ(grown.size, 300u);
  pool.Give(std::move(other));
  pool.Give(std::move(grown));
  pool.Give(WindowPool::Window{});  // nothing to keep
  CHECK_EQ(pool.idle_count(), 2u);
  CHECK_EQ(pool.idle_bytes(), 340u);
  pool.Keep(2, 100);  // 300 > 2 x 100: freed
  CHECK_EQ(pool.idle_count(), 1u);
  CHECK_EQ(pool.idle_bytes(), 40u);
  WindowPool::Window x = pool.Take(120);  // the idle 40, regrown
  WindowPool::Window y = pool.Take(90);
  pool.Give(std::move(x));
  pool.Give(std::move(y));
  CHECK_EQ(pool.idle_bytes(), 210u);
  pool.Keep(1, 60);  // one kept: the most recently given
  CHECK_EQ(pool.idle_count(), 1u);
  CHECK_EQ(pool.idle_bytes(), 90u);
}

}  // namespace
}  // namespace zerofold::gather
