#include "gather/piece_reader.h"

#include <algorithm>
#include <set>
#include <utility>
#include <cstring>
#include <string>

#include "io/range_source.h"
#include "io/zstd_stream.h"
#include "torch/storage_source.h"
#include "torch/checkpoint.h"
#include "zip/crc32.h"
#include "zip/entry_source.h"

namespace zerofold::gather {

namespace {

// A read through the window must serve at least this many runs on average,
// or each run is read directly: a window refill per element of a transposed
// matrix would read the whole window for every element.
constexpr uint64_t kMinRunsPerWindow = 16;

}  // namespace

void WindowPool::Keep(size_t count, size_t bytes) {
  std::erase_if(idle_, [&](const Window& w) { return w.size / 2 > bytes; });
  if (idle_.size() > count) idle_.erase(idle_.begin(), idle_.end() - static_cast<ptrdiff_t>(count));
}

WindowPool::Window WindowPool::Take(size_t bytes) {
  Window w;
  if (!idle_.empty()) {
    w = std::move(idle_.back());
    idle_.pop_back();
  }
  if (w.size < bytes) {
    w.bytes.reset();  // free before allocating: the pool's bound holds while regrowing
    w.bytes.reset(new std::byte[bytes]);  // default-initialized: no zero-fill
    w.size = bytes;
  }
  return w;
}

void WindowPool::Give(Window window) {
  if (window.bytes != nullptr) idle_.push_back(std::move(window));
}

size_t WindowPool::idle_bytes() const {
  size_t n = 0;
  for (const Window& w : idle_) n += w.size;
  return n;
}

PieceReader::PieceReader(const Piece& piece, const SourceFile& file, std::span<std::byte> window,
                         zip::OpenEntries* records)
    : piece_(piece), file_(file), itemsize_(torch::Info(piece.dtype).itemsize), window_(window),
      records_(records != nullptr ? records : &own_records_) {
  left_ = NumelOf(piece.sizes);
  window_capacity_ = window.size();
  // The view's dims without size-1 dims, C-contiguous neighbours merged;
  // the innermost unit-stride dim is the run.
  for (size_t i = 0; i < piece.sizes.size(); ++i) {
    if (piece.sizes[i] == 1) continue;
    Dim d{piece.sizes[i], piece.strides[i]};
    if (!outer_.empty() && outer_.back().stride == d.stride * d.size) {
      outer_.back() = {outer_.back().size * d.size, d.stride};
    } else {
      outer_.push_back(d);
    }
  }
  if (!outer_.empty() && outer_.back().stride == 1) {
    run_ = static_cast<uint64_t>(outer_.back().size);
    outer_.pop_back();
  }
  index_.assign(outer_.size(), 0);
  element_ = static_cast<uint64_t>(piece.view_offset);
  run_left_ = left_ == 0 ? 0 : run_;
  Result<torch::ByteRange> extent = torch::ExtentOf(piece.sizes, piece.strides, piece.view_offset,
                                                    static_cast<uint32_t>(itemsize_));
  extent_end_ = extent.ok() ? extent->end : 0;
  const uint64_t run_bytes = run_ * itemsize_;
  const uint64_t step_bytes = outer_.empty() ? 0 : static_cast<uint64_t>(outer_.back().stride) * itemsize_;
  const uint64_t extent_bytes = extent.ok() ? extent->end - extent->begin : UINT64_MAX;
  if (outer_.empty()) {
    mode_ = Mode::kForward;
  } else if (extent_bytes <= window_capacity_) {
    mode_ = Mode::kWholeExtent;
    window_begin_ = window_end_ = extent.ok() ? extent->begin : 0;
    window_capacity_ = static_cast<size_t>(extent_bytes);
  } else if (run_bytes < window_capacity_ / 2 && step_bytes <= window_capacity_ / kMinRunsPerWindow) {
    mode_ = Mode::kStridedWindow;
  } else {
    mode_ = Mode::kRunByRun;
  }
}

PieceReader::~PieceReader() = default;

Status PieceReader::Fail(Status s) const {
  if (s.record().empty()) s.WithRecord(piece_.record);
  if (s.path().empty()) s.WithPath(file_.path);
  return s;
}

Status PieceReader::Refill(uint64_t pos, size_t size) {
  window_begin_ = pos;
  window_end_ = std::min<uint64_t>(extent_end_, pos + size);
  const size_t n = static_cast<size_t>(window_end_ - window_begin_);
  return ReadStorage(window_begin_, std::span<std::byte>(window_.data(), n));
}

Status PieceReader::Fetch(uint64_t pos, std::span<std::byte> dst) {
  while (!dst.empty()) {
    if (pos >= window_begin_ && pos < window_end_) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), window_end_ - pos));
      std::memcpy(dst.data(), window_.data() + (pos - window_begin_), n);
      pos += n;
      dst = dst.subspan(n);
      continue;
    }
    switch (mode_) {
      case Mode::kForward:
        // Large reads go straight to the caller; small ones (a row's share
        // of a dim-1 chunk) through the window.
        if (dst.size() >= kFirstWindowBytes) return ReadStorage(pos, dst);
        ZF_TRY(Refill(pos, window_capacity_));
        break;
      case Mode::kWholeExtent:
        if (window_end_ > window_begin_) return Status::Internal("a read outside the view's extent");
        ZF_TRY(Refill(window_begin_, window_capacity_));
        break;
      case Mode::kStridedWindow:
        if (dst.size() >= window_capacity_) return ReadStorage(pos, dst);
        ZF_TRY(Refill(pos, window_capacity_));
        break;
      case Mode::kRunByRun:
        return ReadStorage(pos, dst);
    }
  }
  return Status::OK();
}

Status PieceReader::ReadStorage(uint64_t pos, std::span<std::byte> dst) {
  bytes_read_ += dst.size();
  if (piece_.transform == Transform::kNone) {
    if (!zip::CrcRecorded(piece_.entry.crc32) || !piece_.entry.located())
      return ReadExactAt(*file_.source, piece_.data_offset + pos, dst);
    // Through the keeper, whose record folds every piece read in order
    // into its CRC-32 (zip::StreamedCrc): the same reads.
    ZF_ASSIGN_OR_RETURN(zip::EntrySource * record, records_->Open(*file_.source, piece_.entry));
    return ReadExactAt(*record, pos, dst);
  }
  if (piece_.transform == Transform::kDeflate) {
    ZF_ASSIGN_OR_RETURN(zip::EntrySource * record, records_->Open(*file_.source, piece_.entry));
    return ReadExactAt(*record, piece_.data_offset + pos, dst);
  }
  // A decompressed stream goes forward only: going back starts it again.
  if (stream_ == nullptr || pos < stream_pos_) {
    stream_.reset();
    auto range = std::make_unique<io::RangeStream>(*file_.source, piece_.frame_offset, piece_.frame_length);
    ZF_ASSIGN_OR_RETURN(stream_, io::ZstdSource::Open(std::move(range)));
    ZF_TRY(stream_->Skip(piece_.data_offset));
    stream_pos_ = 0;
  }
  ZF_TRY(stream_->Skip(pos - stream_pos_));
  size_t done = 0;
  while (done < dst.size()) {
    ZF_ASSIGN_OR_RETURN(size_t got, stream_->Read(dst.subspan(done)));
    if (got == 0)
      return Status::Corrupt("the zstd frame ends " + std::to_string(dst.size() - done) +
                             " bytes before the view does")
          .WithOffset(stream_->position());
    done += got;
  }
  stream_pos_ = pos + dst.size();
  return Status::OK();
}

Status PieceReader::Read(std::span<std::byte> dst) {
  const uint64_t want = dst.size() / itemsize_;
  if (want > left_)
    return Status::InvalidArgument("asked for " + std::to_string(want) + " elements, " + std::to_string(left_) +
                                   " left");
  left_ -= want;
  size_t done = 0;
  while (done < dst.size()) {
    if (run_left_ == 0) {
      // Odometer over the outer dims, last dim fastest.
      size_t d = outer_.size();
      while (d > 0) {
        --d;
        if (++index_[d] < outer_[d].size) {
          element_ += static_cast<uint64_t>(outer_[d].stride);
          break;
        }
        element_ -= static_cast<uint64_t>(outer_[d].stride) * static_cast<uint64_t>(outer_[d].size - 1);
        index_[d] = 0;
      }
      run_left_ = run_;
    }
    const uint64_t offset_in_run = run_ - run_left_;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(run_left_ * itemsize_, dst.size() - done));
    Status s = Fetch((element_ + offset_in_run) * itemsize_, dst.subspan(done, take));
    if (!s.ok()) return Fail(s);
    done += take;
    run_left_ -= take / itemsize_;
  }
  torch::SwapBytes(dst, piece_.swap_unit);
  return Status::OK();
}

Status CheckDeflatedRecords(const GatherPlan& plan) {
  std::set<std::pair<uint32_t, uint64_t>> checked;  // (file, record data offset)
  for (const GatherTensor& t : plan.tensors) {
    for (const Piece& p : t.pieces) {
      if (p.transform != Transform::kDeflate || !checked.insert({p.file, p.entry.data_offset}).second) continue;
      const SourceFile& file = plan.sources[p.file];
      std::unique_ptr<zip::EntrySource> record = zip::OpenEntry(*file.source, p.entry);
      Status s = record->Finish();
      if (!s.ok()) return s.WithRecord(p.record).WithPath(file.path);
    }
  }
  return Status::OK();
}

}  // namespace zerofold::gather
