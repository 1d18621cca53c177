#include "ops/gather.h"

#include <algorithm>
#include <cstring>

namespace zerofold::ops {

namespace {

// A read through the window must serve at least this many runs on average,
// or each run is read directly: a window refill per 4-byte element of a
// transposed matrix would read the whole window for every element.
constexpr uint64_t kMinRunsPerWindow = 16;

struct Dim {
  int64_t size;
  int64_t stride;
};

// The view's dims without size-1 dims, with C-contiguous neighbours merged.
std::vector<Dim> Collapse(const torch::Tensor& view) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < view.shape.size(); ++i) {
    if (view.shape[i] == 1) continue;
    Dim d{view.shape[i], view.stride[i]};
    if (!dims.empty() && dims.back().stride == d.stride * d.size) {
      dims.back() = {dims.back().size * d.size, d.stride};
    } else {
      dims.push_back(d);
    }
  }
  return dims;
}

}  // namespace

Gatherer::Gatherer(size_t buffer_bytes)
    : out_(std::max<size_t>(buffer_bytes, 64)), window_(std::max<size_t>(buffer_bytes, 64)) {}

Status Gatherer::Flush(const EmitChunk& emit) {
  if (out_fill_ == 0) return Status::OK();
  Status s = emit(std::span<const std::byte>(out_.data(), out_fill_));
  out_fill_ = 0;
  return s;
}

Status Gatherer::Fetch(uint64_t pos, uint64_t len, const EmitChunk& emit) {
  while (len > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(len, out_size_ - out_fill_));
    std::span<std::byte> dst(out_.data() + out_fill_, take);
    const bool in_window = pos >= window_begin_ && pos + take <= window_end_;
    if (!in_window && use_window_ && take <= window_.size()) {
      window_begin_ = pos;
      window_end_ = std::min<uint64_t>(extent_end_, pos + window_.size());
      ZF_TRY(ReadExactAt(*src_, base_ + window_begin_,
                         std::span<std::byte>(window_.data(), static_cast<size_t>(window_end_ - window_begin_))));
    }
    if (pos >= window_begin_ && pos + take <= window_end_) {
      std::memcpy(dst.data(), window_.data() + (pos - window_begin_), take);
    } else {
      ZF_TRY(ReadExactAt(*src_, base_ + pos, dst));
    }
    out_fill_ += take;
    pos += take;
    len -= take;
    if (out_fill_ == out_size_) ZF_TRY(Flush(emit));
  }
  return Status::OK();
}

Status Gatherer::Gather(const RandomSource& src, uint64_t storage_data_offset, const torch::Tensor& view,
                        const EmitChunk& emit) {
  ZF_ASSIGN_OR_RETURN(torch::ByteRange extent, torch::ViewExtent(view));
  if (view.numel() == 0) return Status::OK();
  if (torch::ElementBits(view.dtype) % 8 != 0)
    return Status::Unsupported("cannot gather packed " + std::string(torch::Info(view.dtype).name) + " elements")
        .WithRecord(view.name);
  const uint64_t itemsize = torch::Info(view.dtype).itemsize;
  src_ = &src;
  base_ = storage_data_offset;
  extent_end_ = extent.end;
  window_begin_ = window_end_ = 0;
  out_fill_ = 0;
  out_size_ = static_cast<size_t>(std::max<uint64_t>(out_.size() / itemsize, 1) * itemsize);
  if (out_size_ > out_.size()) out_.resize(out_size_);

  // Innermost contiguous run, and the dims that step between runs.
  std::vector<Dim> outer = Collapse(view);
  uint64_t run = 1;
  if (!outer.empty() && outer.back().stride == 1) {
    run = static_cast<uint64_t>(outer.back().size);
    outer.pop_back();
  }
  const uint64_t run_bytes = run * itemsize;
  const uint64_t step_bytes = outer.empty() ? 0 : static_cast<uint64_t>(outer.back().stride) * itemsize;
  if (extent.end - extent.begin <= window_.size()) {
    // One read for the whole extent.
    use_window_ = true;
    window_begin_ = extent.begin;
    window_end_ = extent.end;
    ZF_TRY(ReadExactAt(src, base_ + extent.begin,
                       std::span<std::byte>(window_.data(), static_cast<size_t>(extent.end - extent.begin))));
  } else {
    use_window_ = run_bytes < window_.size() / 2 && step_bytes <= window_.size() / kMinRunsPerWindow;
  }

  // Odometer over the outer dims, last dim fastest.
  std::vector<int64_t> index(outer.size(), 0);
  uint64_t element = static_cast<uint64_t>(view.storage_offset);
  while (true) {
    ZF_TRY(Fetch(element * itemsize, run_bytes, emit));
    size_t d = outer.size();
    while (d > 0) {
      --d;
      if (++index[d] < outer[d].size) {
        element += static_cast<uint64_t>(outer[d].stride);
        break;
      }
      element -= static_cast<uint64_t>(outer[d].stride) * static_cast<uint64_t>(outer[d].size - 1);
      index[d] = 0;
      if (d == 0) return Flush(emit);
    }
    if (outer.empty()) return Flush(emit);
  }
}

}  // namespace zerofold::ops
