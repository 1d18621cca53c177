#include "gather/view_reader.h"

#include <algorithm>

#include "gather/piece_reader.h"
#include "gather/plan.h"

namespace zerofold::gather {

namespace {

// The piece Gather reads: the whole view, in its storage.
Piece ViewPiece(const torch::Storage& storage, const torch::Tensor& view) {
  Piece piece;
  piece.offsets.assign(view.shape.size(), 0);
  piece.sizes = view.shape;
  piece.dtype = view.dtype;
  PlaceInStorage(storage, 0, &piece);
  piece.view_offset = view.storage_offset;
  piece.strides = view.stride;
  return piece;
}

}  // namespace

void AddViewReads(const torch::Storage& storage, const torch::Tensor& view, const std::string& path,
                  io::ReadPlan* plan) {
  if (view.numel() == 0) return;
  AddPieceReads(ViewPiece(storage, view), path, plan);
}

Gatherer::Gatherer(size_t buffer_bytes)
    : buffer_bytes_(std::max<size_t>(buffer_bytes, 64)), out_(buffer_bytes_) {}

Status Gatherer::Gather(const RandomSource& file, const torch::Storage& storage, const torch::Tensor& view,
                        const EmitChunk& emit) {
  ZF_TRY(torch::ViewExtent(view).status());
  if (view.numel() == 0) return Status::OK();
  if (torch::ElementBits(view.dtype) % 8 != 0)
    return Status::Unsupported("cannot gather packed " + std::string(torch::Info(view.dtype).name) + " elements")
        .WithRecord(view.name);
  const gather::Piece piece = ViewPiece(storage, view);
  const gather::SourceFile source{file.name(), &file};
  if (window_.bytes == nullptr) window_ = WindowPool().Take(buffer_bytes_);
  gather::PieceReader reader(piece, source, window_.span(), &records_);
  const uint64_t itemsize = torch::Info(view.dtype).itemsize;
  const uint64_t chunk = std::max<uint64_t>(out_.size() / itemsize, 1);
  if (out_.size() < chunk * itemsize) out_.resize(chunk * itemsize);
  for (uint64_t left = view.numel(); left > 0;) {
    const uint64_t n = std::min(left, chunk);
    std::span<std::byte> out(out_.data(), static_cast<size_t>(n * itemsize));
    ZF_TRY(reader.Read(out));
    ZF_TRY(emit(out));
    left -= n;
  }
  return Status::OK();
}

}  // namespace zerofold::gather
