#include "torch/digest.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "io/checked_math.h"

namespace zerofold::torch {

std::string Hash128::Hex() const {
  char text[33];
  std::snprintf(text, sizeof text, "%016" PRIx64 "%016" PRIx64, high, low);
  return text;
}

Xxh3Hasher::Xxh3Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  Reset();
}
Xxh3Hasher::~Xxh3Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Xxh3Hasher::Reset() { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }
void Xxh3Hasher::Update(std::span<const std::byte> bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}
Hash128 Xxh3Hasher::Digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return Hash128{h.low64, h.high64};
}

namespace {

// One dimension of a view after dropping size-1 dims and merging dims that
// are contiguous with the next: `size` elements `stride` elements apart.
struct Dim {
  uint64_t size;
  uint64_t stride;
};

// The view's dims, outermost first, with size-1 dims dropped (they move no
// element) and each dim merged into the next when it steps exactly over it
// (stride_i == size_{i+1} * stride_{i+1}), so a contiguous tensor becomes
// one dim of stride 1. REQUIRES: numel > 0, extent checked (so every
// size x stride product below is at most twice the extent).
std::vector<Dim> CollapsedDims(const Tensor& t) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    uint64_t size = static_cast<uint64_t>(t.shape[i]);
    uint64_t stride = static_cast<uint64_t>(t.stride[i]);
    if (size == 1) continue;
    if (!dims.empty() && dims.back().stride == size * stride) {
      dims.back() = {dims.back().size * size, stride};
    } else {
      dims.push_back({size, stride});
    }
  }
  if (dims.empty()) dims.push_back({1, 1});  // a 0-dim or all-ones tensor: one element
  return dims;
}

// Streams a tensor's logical bytes into an xxh3 state. The buffer's first
// half is a read window over the storage (for gathering elements), the
// second half stages gathered bytes before they are hashed.
class Digester {
 public:
  // `bytes`: the storage's bytes from offset 0 (torch/storage_source.h).
  Digester(const RandomSource& bytes, const Storage& storage, uint32_t itemsize,
           std::span<std::byte> buffer, Xxh3Hasher& hasher)
      : src_(bytes), storage_(storage), itemsize_(itemsize), hasher_(hasher), buffer_(buffer),
        window_(buffer.first(buffer.size() / 2)), staging_(buffer.subspan(buffer.size() / 2)) {}

  // Hashes `count` contiguous elements starting at byte `pos` of the storage.
  Status Run(uint64_t pos, uint64_t count) {
    ZF_TRY(FlushStaging());
    uint64_t left = count * itemsize_;
    window_end_ = window_begin_;  // the whole buffer is overwritten below
    while (left > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, buffer_.size()));
      ZF_TRY(Read(pos, buffer_.first(n)));
      hasher_.Update(buffer_.first(n));
      pos += n;
      left -= n;
    }
    return Status::OK();
  }

  // Hashes the element at byte `pos` of the storage.
  Status Element(uint64_t pos, uint64_t extent_end) {
    if (pos < window_begin_ || pos + itemsize_ > window_end_) {
      // Refill from pos forward: row-major order mostly moves forward.
      uint64_t n = std::min<uint64_t>(window_.size(), extent_end - pos);
      ZF_TRY(Read(pos, window_.first(static_cast<size_t>(n))));
      window_begin_ = pos;
      window_end_ = pos + n;
    }
    if (staged_ + itemsize_ > staging_.size()) ZF_TRY(FlushStaging());
    std::memcpy(staging_.data() + staged_, window_.data() + (pos - window_begin_), itemsize_);
    staged_ += itemsize_;
    return Status::OK();
  }

  Status FlushStaging() {
    if (staged_ > 0) hasher_.Update(staging_.first(staged_));
    staged_ = 0;
    return Status::OK();
  }

 private:
  Status Read(uint64_t pos, std::span<std::byte> dst) {
    Status s = ReadExactAt(src_, pos, dst);
    if (!s.ok()) return s.WithRecord(storage_.record).WithPath(src_.name());
    return Status::OK();
  }

  const RandomSource& src_;
  const Storage& storage_;
  const uint32_t itemsize_;
  Xxh3Hasher& hasher_;
  std::span<std::byte> buffer_;  // window_ then staging_
  std::span<std::byte> window_;
  std::span<std::byte> staging_;
  uint64_t window_begin_ = 0;
  uint64_t window_end_ = 0;  // empty window
  size_t staged_ = 0;
};

}  // namespace

Result<Hash128> TensorDigest(StorageSources& sources, const Checkpoint& ckpt,
                             const Tensor& tensor, std::span<std::byte> buffer) {
  if (buffer.size() < kMinDigestBuffer)
    return Status::InvalidArgument("digest buffer of " + std::to_string(buffer.size()) + " bytes; at least " +
                                   std::to_string(kMinDigestBuffer) + " needed");
  if (tensor.storage >= ckpt.storages.size())
    return Status::Internal("tensor names storage " + std::to_string(tensor.storage) + " of " +
                            std::to_string(ckpt.storages.size()))
        .WithRecord(tensor.name);
  const Storage& storage = ckpt.storages[tensor.storage];
  const uint32_t itemsize = Info(tensor.dtype).itemsize;

  Xxh3Hasher hasher;

  if (tensor.numel() > 0) {
    ZF_ASSIGN_OR_RETURN(ByteRange extent, ViewExtent(tensor));
    if (extent.end > storage.nbytes || storage.nbytes > storage.record_size)
      return Status::Corrupt("view ends at byte " + std::to_string(extent.end) + " of storage " + storage.key +
                             ", which holds " + std::to_string(storage.nbytes) + " bytes")
          .WithRecord(tensor.name);
    if (!io::CheckedAdd(storage.data_offset, extent.end).has_value())
      return Status::Corrupt("storage " + storage.key + " at offset " + std::to_string(storage.data_offset) +
                             " ends past 2^64")
          .WithRecord(tensor.name);

    if (const uint32_t bits = ElementBits(tensor.dtype); bits < 8) {
      // Packed sub-byte elements (quint4x2, quint2x4): torch stores them
      // contiguous from a byte boundary, so the logical bytes are the
      // extent's bytes (what torch's int_repr() holds). Other layouts would
      // need bit shifting; torch writes none.
      const std::vector<Dim> dims = CollapsedDims(tensor);
      if (dims.size() != 1 || (dims[0].stride != 1 && dims[0].size != 1) ||
          static_cast<uint64_t>(tensor.storage_offset) * bits % 8 != 0)
        return Status::Unsupported("packed " + std::string(Info(tensor.dtype).name) + " view of shape " +
                                   ShapeText(tensor.shape) + ", stride " + ShapeText(tensor.stride) +
                                   ", offset " + std::to_string(tensor.storage_offset) +
                                   " is not contiguous from a byte boundary")
            .WithRecord(tensor.name);
      ZF_ASSIGN_OR_RETURN(const RandomSource* src, sources.For(storage));
      Digester bytes(*src, storage, 1, buffer, hasher);
      ZF_TRY(bytes.Run(extent.begin, extent.end - extent.begin));
      ZF_TRY(bytes.FlushStaging());
      return hasher.Digest();
    }
    const std::vector<Dim> dims = CollapsedDims(tensor);
    const Dim inner = dims.back();
    const size_t outer_dims = dims.size() - 1;
    std::vector<uint64_t> index(outer_dims, 0);
    const uint64_t first = static_cast<uint64_t>(tensor.storage_offset);
    ZF_ASSIGN_OR_RETURN(const RandomSource* src, sources.For(storage));
    Digester digester(*src, storage, itemsize, buffer, hasher);
    // Every element offset lies in [first, extent end): strides are
    // non-negative (ViewExtent refuses others), so no sum below overflows.
    for (;;) {
      uint64_t base = first;
      for (size_t k = 0; k < outer_dims; ++k) base += index[k] * dims[k].stride;
      if (inner.stride == 1) {
        ZF_TRY(digester.Run(base * itemsize, inner.size));
      } else {
        for (uint64_t j = 0; j < inner.size; ++j)
          ZF_TRY(digester.Element((base + j * inner.stride) * itemsize, extent.end));
      }
      size_t k = outer_dims;
      while (k > 0 && ++index[k - 1] == dims[k - 1].size) index[--k] = 0;
      if (k == 0) break;
    }
    ZF_TRY(digester.FlushStaging());
  }
  return hasher.Digest();
}

Result<Hash128> TensorDigest(const RandomSource& src, const Checkpoint& ckpt,
                             const Tensor& tensor, std::span<std::byte> buffer) {
  StorageSources sources(src);
  return TensorDigest(sources, ckpt, tensor, buffer);
}

}  // namespace zerofold::torch
