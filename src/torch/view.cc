// View arithmetic: element counts, the stride-aware byte extent of a view,
// and the check that every view stays inside its storage.
#include "torch/checkpoint.h"

#include <string>

#include "io/checked_math.h"

namespace zerofold::torch {
namespace {

// Saturates at UINT64_MAX; callers that need an exact count use
// ExtentOf, which fails on overflow instead.
uint64_t SaturatingNumel(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    std::optional<uint64_t> m = io::CheckedMul<uint64_t>(n, static_cast<uint64_t>(d));
    n = m ? *m : UINT64_MAX;
  }
  return n;
}

}  // namespace

std::string ShapeText(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

uint64_t Tensor::numel() const { return SaturatingNumel(shape); }

uint64_t Tensor::nbytes() const {
  const uint32_t element_bits = ElementBits(dtype);
  if (element_bits < 8) {  // packed: ceil(numel x bits / 8) without overflow
    uint64_t per_byte = 8 / element_bits, n = numel();
    return n / per_byte + (n % per_byte != 0);
  }
  std::optional<uint64_t> n = io::CheckedMul<uint64_t>(numel(), element_bits / 8);
  return n ? *n : UINT64_MAX;
}

Result<ByteRange> ExtentOf(std::span<const int64_t> shape, std::span<const int64_t> stride,
                           int64_t storage_offset, uint32_t itemsize) {
  if (shape.size() != stride.size())
    return Status::Corrupt("view has " + std::to_string(shape.size()) + " sizes but " +
                           std::to_string(stride.size()) + " strides");
  if (storage_offset < 0)
    return Status::Corrupt("view storage offset is negative: " + std::to_string(storage_offset));
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return Status::Corrupt("view size[" + std::to_string(i) + "] is negative: " + std::to_string(shape[i]));
    if (stride[i] < 0)
      return Status::Corrupt("view stride[" + std::to_string(i) + "] is negative: " + std::to_string(stride[i]));
    if (shape[i] == 0) empty = true;
  }
  // An empty view reads no element, so it has no extent: torch does not
  // check its offset against the storage either.
  if (empty) return ByteRange{0, 0};
  // Last element touched: offset + sum((size_i - 1) * stride_i). Zero
  // strides (expanded dims) add nothing. Signed 64-bit like torch's own
  // sizes, so an extent past INT64_MAX bytes is an overflow.
  int64_t last = storage_offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    std::optional<int64_t> step = io::CheckedMul<int64_t>(shape[i] - 1, stride[i]);
    std::optional<int64_t> sum = step ? io::CheckedAdd<int64_t>(last, *step) : std::nullopt;
    if (!sum)
      return Status::Corrupt("view extent overflows at dim " + std::to_string(i) + " (size " +
                             std::to_string(shape[i]) + ", stride " + std::to_string(stride[i]) + ")");
    last = *sum;
  }
  std::optional<int64_t> end_elems = io::CheckedAdd<int64_t>(last, 1);
  std::optional<int64_t> end = end_elems ? io::CheckedMul<int64_t>(*end_elems, itemsize) : std::nullopt;
  std::optional<int64_t> begin = io::CheckedMul<int64_t>(storage_offset, itemsize);
  if (!end || !begin)
    return Status::Corrupt("view extent overflows: last element " + std::to_string(last) + " of " +
                           std::to_string(itemsize) + "-byte items");
  return ByteRange{static_cast<uint64_t>(*begin), static_cast<uint64_t>(*end)};
}

Result<ByteRange> ViewExtent(const Tensor& tensor) {
  const uint32_t bits = ElementBits(tensor.dtype);
  Result<ByteRange> r = ExtentOf(tensor.shape, tensor.stride, tensor.storage_offset, bits < 8 ? 1 : bits / 8);
  if (r.ok() && bits < 8) {
    // Packed elements: bytes from the one holding the first element to the
    // one holding the last (the extent's elements are counted in items of 1).
    return ByteRange{r->begin * bits / 8, (r->end * bits + 7) / 8};
  }
  if (!r.ok()) {
    Status s = r.status();
    s.WithRecord(tensor.name);
    return s;
  }
  return r;
}

Status CheckViews(const Checkpoint& ckpt) {
  for (const Storage& s : ckpt.storages) {
    if (s.record_size < s.nbytes)
      return Status::Corrupt("storage '" + s.key + "' declares " + std::to_string(s.nbytes) + " bytes, its record " +
                             s.record + " holds only " + std::to_string(s.record_size))
          .WithRecord(s.record)
          .WithOffset(s.data_offset);
  }
  for (const Tensor& t : ckpt.tensors) {
    ZF_ASSIGN_OR_RETURN(ByteRange extent, ViewExtent(t));
    // torch sizes are int64: a tensor of more than 2^63 bytes cannot exist,
    // even one whose zero strides keep its extent small.
    uint64_t bytes = Info(t.dtype).itemsize;
    for (int64_t d : t.shape) {
      std::optional<uint64_t> m = io::CheckedMul<uint64_t>(bytes, static_cast<uint64_t>(d));
      if (!m || *m > static_cast<uint64_t>(INT64_MAX))
        return Status::Corrupt("tensor of shape " + ShapeText(t.shape) + " has more than 2^63 bytes").WithRecord(t.name);
      bytes = *m;
    }
    if (t.storage >= ckpt.storages.size())
      return Status::Internal("tensor names storage " + std::to_string(t.storage) + " of " +
                              std::to_string(ckpt.storages.size()))
          .WithRecord(t.name);
    const Storage& s = ckpt.storages[t.storage];
    if (extent.end > s.nbytes)
      return Status::Corrupt("view bytes [" + std::to_string(extent.begin) + ", " + std::to_string(extent.end) +
                             ") leave storage '" + s.key + "' of " + std::to_string(s.nbytes) + " bytes")
          .WithRecord(t.name);
  }
  return Status::OK();
}

}  // namespace zerofold::torch
