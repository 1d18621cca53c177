#include "ops/merge_assemble.h"

#include <algorithm>
#include <string>

#include "io/checked_math.h"
#include "ops/merge_pickle.h"
#include "torch/cast.h"
#include "ops/merge_layout.h"

namespace zerofold::ops {

namespace {

constexpr size_t kMinBuffer = 16;  // holds one element of every dtype

}  // namespace

bool CanConvert(torch::DType from, torch::DType to) {
  return from == to || (torch::IsCastable(from) && torch::IsCastable(to));
}

TensorAssembler::TensorAssembler(const LoadedZero& loaded, size_t buffer_bytes)
    : loaded_(loaded), buffer_bytes_(std::max(buffer_bytes, kMinBuffer)) {}

Status TensorAssembler::Assemble(const zero::OutputTensor& tensor, const torch::EmitBytes& emit) {
  uint64_t total = 0;
  for (const zero::SourceSlice& s : tensor.slices) total += s.count;
  if (total != NumelOf(tensor.shape))
    return Status::Internal("the plan gives " + tensor.name + " " + std::to_string(total) + " elements, its shape " +
                            std::to_string(NumelOf(tensor.shape)));
  // The output is a fresh contiguous tensor: torch's .to() of one rounds
  // NaNs to bfloat16 as TorchNanRule says for its layout.
  nan_ = torch::TorchNanRule(tensor.shape, ContiguousStrides(tensor.shape));
  element_ = 0;
  for (const zero::SourceSlice& s : tensor.slices) ZF_TRY(AssembleSlice(tensor, s, emit));
  return Status::OK();
}

Status TensorAssembler::AssembleSlice(const zero::OutputTensor& tensor, const zero::SourceSlice& slice,
                                      const torch::EmitBytes& emit) {
  const ZeroFile& file = loaded_.FileOf(slice);
  auto found = file.storages.find(slice.storage);
  if (found == file.storages.end()) {
    return Status::Corrupt(tensor.name + " needs storage " + slice.storage + ", which the file does not hold")
        .WithPath(file.path);
  }
  const StorageLocation& where = found->second;
  const uint32_t in_size = torch::Info(slice.dtype).itemsize;
  const uint32_t out_size = torch::Info(tensor.dtype).itemsize;
  if (!CanConvert(slice.dtype, tensor.dtype)) {
    return Status::Unsupported(tensor.name + ": no conversion from " + std::string(torch::Info(slice.dtype).name) +
                               " to " + std::string(torch::Info(tensor.dtype).name))
        .WithPath(file.path);
  }
  std::optional<uint64_t> begin = io::CheckedMul<uint64_t>(slice.offset, in_size);
  std::optional<uint64_t> len = io::CheckedMul<uint64_t>(slice.count, in_size);
  if (!begin || !len || !io::RangeInside(*begin, *len, where.nbytes)) {
    return Status::Corrupt(tensor.name + " needs elements " + std::to_string(slice.offset) + " to " +
                           std::to_string(slice.offset) + "+" + std::to_string(slice.count) + " of storage " +
                           slice.storage + ", which holds " + std::to_string(where.nbytes / in_size) + " elements")
        .WithPath(file.path)
        .WithRecord(where.record);
  }
  Result<const RandomSource*> opened = file.bytes->For(where);
  if (!opened.ok()) return Status(opened.status()).WithPath(file.path);
  const RandomSource* bytes = *opened;
  const bool copy = slice.dtype == tensor.dtype;
  const size_t chunk_elems = buffer_bytes_ / std::max(in_size, out_size);
  if (in_.size() < chunk_elems * in_size) in_.resize(chunk_elems * in_size);
  if (!copy && out_.size() < chunk_elems * out_size) out_.resize(chunk_elems * out_size);
  uint64_t done = 0;
  while (done < slice.count) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_elems, slice.count - done));
    std::span<std::byte> in(in_.data(), n * in_size);
    Status read = ReadExactAt(*bytes, *begin + done * in_size, in);
    if (!read.ok()) return read.WithRecord(where.record).WithPath(file.path);
    bytes_read_ += in.size();
    if (copy) {
      ZF_TRY(emit(in));
    } else {
      std::span<std::byte> out(out_.data(), n * out_size);
      Status converted = torch::CastElements(slice.dtype, tensor.dtype, in, out, nan_, element_);
      if (!converted.ok()) return converted.WithRecord(where.record).WithPath(file.path);
      ZF_TRY(emit(out));
    }
    done += n;
    element_ += n;
  }
  return Status::OK();
}

}  // namespace zerofold::ops
