#include "gather/read_ahead.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "torch/checkpoint.h"

namespace zerofold::gather {

std::vector<AheadRange> PlanReadAhead(std::span<const GatherTensor* const> tensors, uint64_t granule) {
  std::vector<AheadRange> ranges;
  uint64_t base = 0;  // output byte of the tensor's first element
  for (const GatherTensor* t : tensors) {
    const uint64_t out_size = torch::Info(t->dtype).itemsize;
    for (const Piece& p : t->pieces) {
      const uint64_t numel = NumelOf(p.sizes);
      if (p.transform != Transform::kNone || numel == 0) continue;
      const uint32_t itemsize = torch::Info(p.dtype).itemsize;
      Result<torch::ByteRange> extent = torch::ExtentOf(p.sizes, p.strides, p.view_offset, itemsize);
      if (!extent.ok()) continue;
      const uint64_t bytes = extent->end - extent->begin;
      if (bytes / 2 > numel * itemsize) continue;
      const GridSpan span = SpanInGrid(t->grid, p);
      const uint64_t first = base + span.first * out_size;
      const uint64_t spread = (span.end - span.first) * out_size;
      for (uint64_t at = 0; at < bytes; at += granule) {
        // Bytes [at, ...) of the extent are read after `at / bytes` of the
        // piece's span; in 128-bit arithmetic, as both may be large.
        const uint64_t share =
            static_cast<uint64_t>(static_cast<unsigned __int128>(spread) * at / bytes);
        ranges.push_back({p.file, p.data_offset + extent->begin + at, std::min(granule, bytes - at), first + share});
      }
    }
    base += OutputBytes(*t);
  }
  std::sort(ranges.begin(), ranges.end(), [](const AheadRange& a, const AheadRange& b) {
    return std::tie(a.needed_at, a.file, a.offset) < std::tie(b.needed_at, b.file, b.offset);
  });
  return ranges;
}

ReadAhead::ReadAhead(std::span<const SourceFile> sources, std::vector<AheadRange> ranges, uint64_t ahead_bytes)
    : sources_(sources), ranges_(std::move(ranges)), ahead_bytes_(ahead_bytes) {}

void ReadAhead::Advance(uint64_t position) {
  const uint64_t horizon = position + ahead_bytes_;
  for (; next_ < ranges_.size() && ranges_[next_].needed_at < horizon; ++next_) {
    const AheadRange& r = ranges_[next_];
    sources_[r.file].source->WillNeed(r.offset, r.length);
  }
}

}  // namespace zerofold::gather
