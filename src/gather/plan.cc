#include "gather/plan.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "io/checked_math.h"
#include "torch/checkpoint.h"
#include "torch/storage_source.h"

namespace zerofold::gather {

namespace {

std::string BoxText(const Piece& p) {
  return "offsets " + torch::ShapeText(p.offsets) + " sizes " + torch::ShapeText(p.sizes);
}

bool IsEmpty(const Piece& p) {
  return std::any_of(p.sizes.begin(), p.sizes.end(), [](int64_t s) { return s == 0; });
}

// True if the boxes share an element. REQUIRES: same rank, both non-empty.
bool Overlap(const Piece& a, const Piece& b) {
  for (size_t d = 0; d < a.offsets.size(); ++d) {
    if (std::max(a.offsets[d], b.offsets[d]) >= std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]))
      return false;
  }
  return true;
}

}  // namespace

void PlaceInStorage(const torch::Storage& storage, uint64_t archive_offset, Piece* p) {
  p->record = storage.record;
  p->storage_nbytes = storage.nbytes;
  p->swap_unit = storage.swap_unit;
  p->transform = storage.method == 0 ? Transform::kNone : Transform::kDeflate;
  p->entry = torch::RecordEntry(storage);
  p->entry.data_offset += archive_offset;
  if (p->transform == Transform::kNone) {
    p->data_offset = p->entry.data_offset;
    return;
  }
  p->data_offset = 0;
}

void AddPieceReads(const Piece& p, const std::string& path, io::ReadPlan* plan) {
  switch (p.transform) {
    case Transform::kNone: {
      Result<torch::ByteRange> extent =
          torch::ExtentOf(p.sizes, p.strides, p.view_offset, torch::Info(p.dtype).itemsize);
      if (extent.ok()) plan->Add(path, p.data_offset + extent->begin, extent->end - extent->begin);
      return;
    }
    case Transform::kDeflate:
      plan->Add(path, p.entry.data_offset, p.entry.compressed_size);
      return;
    case Transform::kZstd:
      plan->Add(path, p.frame_offset, p.frame_length);
      return;
  }
}

void AddStorageReads(const torch::Storage& storage, uint64_t begin, uint64_t end, const std::string& path,
                     io::ReadPlan* plan) {
  if (storage.method == 0) {
    plan->Add(path, storage.data_offset + begin, end - begin);
  } else if (begin < end) {
    plan->Add(path, storage.data_offset, storage.compressed_size);
  }
}

void AddTensorReads(const GatherPlan& plan_of, const GatherTensor& tensor, io::ReadPlan* plan) {
  for (const Piece& p : tensor.pieces) AddPieceReads(p, plan_of.sources[p.file].path, plan);
}

uint64_t NumelOf(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t OutputBytes(const GatherTensor& tensor) { return NumelOf(tensor.shape) * torch::Info(tensor.dtype).itemsize; }

GridSpan SpanInGrid(std::span<const int64_t> grid, const Piece& p) {
  GridSpan span;
  uint64_t stride = 1;
  for (size_t d = grid.size(); d-- > 0;) {
    span.first += static_cast<uint64_t>(p.offsets[d]) * stride;
    span.end += static_cast<uint64_t>(p.offsets[d] + p.sizes[d] - 1) * stride;
    stride *= static_cast<uint64_t>(grid[d]);
  }
  span.end += 1;
  return span;
}

Status CheckTiling(std::span<const int64_t> grid, std::span<const Piece> pieces,
                   std::span<const std::string> piece_names) {
  auto name = [&](size_t i) { return i < piece_names.size() ? piece_names[i] : "piece " + std::to_string(i); };
  uint64_t numel = 1;
  for (int64_t g : grid) {
    std::optional<uint64_t> m;
    if (g >= 0) m = io::CheckedMul<uint64_t>(numel, static_cast<uint64_t>(g));
    if (!m) return Status::Corrupt("shape " + torch::ShapeText(grid) + " has a negative size or too many elements");
    numel = *m;
  }
  uint64_t covered = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (p.offsets.size() != grid.size() || p.sizes.size() != grid.size())
      return Status::Corrupt(name(i) + " has " + std::to_string(p.offsets.size()) + " offsets and " +
                             std::to_string(p.sizes.size()) + " sizes for a shape of " + std::to_string(grid.size()) +
                             " dims " + torch::ShapeText(grid));
    uint64_t volume = 1;
    for (size_t d = 0; d < grid.size(); ++d) {
      std::optional<int64_t> end = io::CheckedAdd<int64_t>(p.offsets[d], p.sizes[d]);
      if (p.offsets[d] < 0 || p.sizes[d] < 0 || !end || *end > grid[d])
        return Status::Corrupt(name(i) + " (" + BoxText(p) + ") lies outside the shape " + torch::ShapeText(grid) +
                               " in dim " + std::to_string(d));
      volume *= static_cast<uint64_t>(p.sizes[d]);  // <= numel: inside the grid
    }
    covered = io::CheckedAdd(covered, volume).value_or(UINT64_MAX);  // saturating: past numel means overlap
  }
  // Overlaps, pairwise, sorted by their offset in the dim where offsets
  // differ most (the dim the tensor is split along), so a pair is compared
  // only while the boxes can meet in that dim: O(pieces log pieces) for a
  // split along one dim, whichever it is.
  size_t sweep = 0;
  size_t most = 0;
  for (size_t d = 0; d < grid.size(); ++d) {
    std::vector<int64_t> at;
    for (const Piece& p : pieces) at.push_back(p.offsets[d]);
    std::sort(at.begin(), at.end());
    size_t distinct = static_cast<size_t>(std::unique(at.begin(), at.end()) - at.begin());
    if (distinct > most) most = distinct, sweep = d;
  }
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (!grid.empty())
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return pieces[a].offsets[sweep] < pieces[b].offsets[sweep]; });
  for (size_t x = 0; x < order.size(); ++x) {
    const Piece& a = pieces[order[x]];
    if (IsEmpty(a)) continue;
    for (size_t y = x + 1; y < order.size(); ++y) {
      const Piece& b = pieces[order[y]];
      if (!grid.empty() && b.offsets[sweep] >= a.offsets[sweep] + a.sizes[sweep]) break;
      if (IsEmpty(b) || !Overlap(a, b)) continue;
      size_t first = std::min(order[x], order[y]), second = std::max(order[x], order[y]);
      return Status::Corrupt(name(first) + " (" + BoxText(pieces[first]) + ") and " + name(second) + " (" +
                             BoxText(pieces[second]) + ") overlap");
    }
  }
  if (covered != numel)
    return Status::Corrupt("the chunks cover " + std::to_string(covered) + " of the " + std::to_string(numel) +
                           " elements of shape " + torch::ShapeText(grid) + ": a gap");
  return Status::OK();
}

Status CheckPieceView(const Piece& p) {
  if (p.strides.size() != p.sizes.size())
    return Status::Corrupt("a view of " + std::to_string(p.sizes.size()) + " dims has " +
                           std::to_string(p.strides.size()) + " strides")
        .WithRecord(p.record);
  const uint32_t itemsize = torch::Info(p.dtype).itemsize;
  if (torch::ElementBits(p.dtype) % 8 != 0)
    return Status::Unsupported("cannot gather packed " + std::string(torch::Info(p.dtype).name) + " elements")
        .WithRecord(p.record);
  ZF_ASSIGN_OR_RETURN(torch::ByteRange extent, torch::ExtentOf(p.sizes, p.strides, p.view_offset, itemsize));
  if (extent.end > p.storage_nbytes)
    return Status::Corrupt("a view (offset " + std::to_string(p.view_offset) + ", size " + torch::ShapeText(p.sizes) +
                           ", stride " + torch::ShapeText(p.strides) + ") reaches byte " + std::to_string(extent.end) +
                           " of a storage of " + std::to_string(p.storage_nbytes) + " bytes")
        .WithRecord(p.record);
  return Status::OK();
}

}  // namespace zerofold::gather
