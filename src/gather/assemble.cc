#include "gather/assemble.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <string>
#include <utility>

#include "gather/piece_reader.h"
#include "torch/cast.h"
#include "torch/state_dict.h"

namespace zerofold::gather {

namespace {

constexpr size_t kMinBuffer = 16;  // holds one element of every dtype

// How a piece's elements fall in the grid's C order: `blocks` runs of
// `block` consecutive grid elements, one per index of the box's dims
// before `split` (the dims from `split` on are whole in the grid but the
// first of them).
struct Walk {
  size_t piece = 0;
  size_t split = 0;
  uint64_t block = 0;
  uint64_t blocks_left = 0;
  std::vector<int64_t> index;  // over the box's dims [0, split)
  uint64_t start = 0;          // grid element where the next block begins
};

uint64_t BlockStart(const Piece& p, const Walk& w, std::span<const uint64_t> grid_strides) {
  uint64_t start = 0;
  for (size_t d = 0; d < grid_strides.size(); ++d) {
    uint64_t at = static_cast<uint64_t>(p.offsets[d]) + (d < w.split ? static_cast<uint64_t>(w.index[d]) : 0);
    start += at * grid_strides[d];
  }
  return start;
}

}  // namespace

bool CanConvert(torch::DType from, torch::DType to) {
  return from == to || (torch::IsCastable(from) && torch::IsCastable(to));
}

TensorAssembler::TensorAssembler(std::span<const SourceFile> sources, size_t buffer_bytes)
    : sources_(sources), buffer_bytes_(std::max(buffer_bytes, kMinBuffer)) {}

void TensorAssembler::ReadAheadFor(std::vector<const GatherTensor*> order) {
  ahead_.emplace(sources_, PlanReadAhead(order, kReadAheadGranule), kReadAheadBytes);
  ahead_order_ = std::move(order);
  ahead_next_ = 0;
  ahead_base_ = 0;
}

Status TensorAssembler::Assemble(const GatherTensor& tensor, const torch::EmitBytes& emit) {
  const std::span<const int64_t> grid = tensor.grid;
  const size_t rank = grid.size();
  const uint64_t numel = NumelOf(grid);
  if (numel != NumelOf(tensor.shape))
    return Status::Internal("the plan gives " + tensor.name + " a grid of " + std::to_string(numel) +
                            " elements, its shape " + std::to_string(NumelOf(tensor.shape)));
  std::vector<uint64_t> grid_strides(rank);
  for (size_t d = rank, s = 1; d-- > 0;) {
    grid_strides[d] = s;
    s *= static_cast<uint64_t>(grid[d]);
  }

  const uint32_t out_size = torch::Info(tensor.dtype).itemsize;
  uint32_t in_size = 0;  // widest source element that needs converting
  uint64_t covered = 0;
  std::vector<Walk> walks;
  for (size_t i = 0; i < tensor.pieces.size(); ++i) {
    const Piece& p = tensor.pieces[i];
    if (p.file >= sources_.size() || p.offsets.size() != rank || p.sizes.size() != rank)
      return Status::Internal("the plan gives " + tensor.name + " a piece outside its sources or grid");
    const std::string& path = sources_[p.file].path;
    if (!CanConvert(p.dtype, tensor.dtype))
      return Status::Unsupported(tensor.name + ": no conversion from " + std::string(torch::Info(p.dtype).name) +
                                 " to " + std::string(torch::Info(tensor.dtype).name))
          .WithPath(path);
    if (Status s = CheckPieceView(p); !s.ok()) return s.WithPath(path);
    if (p.dtype != tensor.dtype) in_size = std::max(in_size, torch::Info(p.dtype).itemsize);
    const uint64_t volume = NumelOf(p.sizes);
    if (volume == 0) continue;
    covered += volume;
    Walk w;
    w.piece = i;
    w.split = rank == 0 ? 0 : rank - 1;
    while (w.split > 0 && p.sizes[w.split] == grid[w.split]) --w.split;
    w.block = 1;
    for (size_t d = w.split; d < rank; ++d) w.block *= static_cast<uint64_t>(p.sizes[d]);
    w.blocks_left = volume / w.block;
    w.index.assign(w.split, 0);
    w.start = BlockStart(p, w, grid_strides);
    walks.push_back(std::move(w));
  }
  if (covered != numel)
    return Status::Internal("the plan's pieces of " + tensor.name + " cover " + std::to_string(covered) + " of " +
                            std::to_string(numel) + " elements");

  // Pieces read at the same time share the buffer between their windows.
  std::vector<std::pair<uint64_t, int>> events;  // (grid element, +1 first block / -1 past last block)
  for (const Walk& w : walks) {
    const GridSpan span = SpanInGrid(grid, tensor.pieces[w.piece]);
    events.emplace_back(span.first, 1);
    events.emplace_back(span.end, -1);
  }
  std::sort(events.begin(), events.end());
  int active = 0, most = 1;
  for (const auto& [at, delta] : events) most = std::max(most, active += delta);
  const size_t window = std::max({std::min(kMinWindowBytes, buffer_bytes_), buffer_bytes_ / static_cast<size_t>(most),
                                  kMinReaderWindowBytes});
  windows_.Keep(static_cast<size_t>(most), window);

  const size_t out_elems = std::max<size_t>(buffer_bytes_ / std::max(out_size, in_size), 1);
  if (out_.size() < out_elems * out_size) out_.resize(out_elems * out_size);
  if (in_size != 0 && in_.size() < out_elems * in_size) in_.resize(out_elems * in_size);
  // The output is a fresh contiguous tensor: torch's .to() of one rounds
  // NaNs to bfloat16 as TorchNanRule says for its layout.
  const torch::NanRule nan = torch::TorchNanRule(tensor.shape, torch::ContiguousStrides(tensor.shape));

  // Read-ahead moves with the output when this is the tensor it expects.
  ReadAhead* ahead = nullptr;
  const uint64_t base = ahead_base_;
  if (ahead_ && ahead_next_ < ahead_order_.size() && ahead_order_[ahead_next_] == &tensor) {
    ahead = &*ahead_;
    ++ahead_next_;
    ahead_base_ += OutputBytes(tensor);
    ahead->Advance(base);
  }

  using Next = std::pair<uint64_t, size_t>;  // (block start, walk)
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> queue;
  for (size_t k = 0; k < walks.size(); ++k) queue.emplace(walks[k].start, k);
  std::vector<std::unique_ptr<PieceReader>> readers(walks.size());
  std::vector<WindowPool::Window> lent(walks.size());  // readers[k]'s window
  // Gives every window lent back on every return, so the pool keeps them.
  struct GiveBack {
    WindowPool& pool;
    std::vector<std::unique_ptr<PieceReader>>& readers;
    std::vector<WindowPool::Window>& lent;
    ~GiveBack() {
      readers.clear();
      for (WindowPool::Window& w : lent) pool.Give(std::move(w));
    }
  } give_back{windows_, readers, lent};
  uint64_t cursor = 0;  // next grid element
  size_t fill = 0;      // elements in out_
  while (!queue.empty()) {
    const size_t k = queue.top().second;
    queue.pop();
    Walk& w = walks[k];
    const Piece& p = tensor.pieces[w.piece];
    if (w.start != cursor)
      return Status::Internal("the plan's pieces of " + tensor.name + " do not tile it: element " +
                              std::to_string(cursor) + " is next, a piece starts at " + std::to_string(w.start));
    if (!readers[k]) {
      lent[k] = windows_.Take(window);
      readers[k] = std::make_unique<PieceReader>(p, sources_[p.file], lent[k].span(), &deflated_);
    }
    PieceReader& reader = *readers[k];
    const bool copy = p.dtype == tensor.dtype;
    const uint32_t piece_size = torch::Info(p.dtype).itemsize;
    for (uint64_t left = w.block; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, out_elems - fill));
      std::span<std::byte> out(out_.data() + fill * out_size, n * out_size);
      if (copy) {
        ZF_TRY(reader.Read(out));
      } else {
        std::span<std::byte> in(in_.data(), n * piece_size);
        ZF_TRY(reader.Read(in));
        Status converted = torch::CastElements(p.dtype, tensor.dtype, in, out, nan, cursor);
        if (!converted.ok()) return converted.WithRecord(p.record).WithPath(sources_[p.file].path);
      }
      fill += n;
      cursor += n;
      left -= n;
      if (fill == out_elems) {
        if (ahead != nullptr) ahead->Advance(base + cursor * out_size);
        ZF_TRY(emit(std::span<const std::byte>(out_.data(), fill * out_size)));
        fill = 0;
      }
    }
    if (--w.blocks_left > 0) {
      for (size_t d = w.split; d-- > 0;) {
        if (++w.index[d] < p.sizes[d]) break;
        w.index[d] = 0;
      }
      w.start = BlockStart(p, w, grid_strides);
      queue.emplace(w.start, k);
    } else {
      bytes_read_ += reader.bytes_read();
      readers[k].reset();
      windows_.Give(std::move(lent[k]));
    }
  }
  if (fill > 0) ZF_TRY(emit(std::span<const std::byte>(out_.data(), fill * out_size)));
  return Status::OK();
}

}  // namespace zerofold::gather
