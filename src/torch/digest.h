// Tensor digests: what verification, diff and merge --verify compare.
//
// A tensor's digest is the xxh3-128 of its logical bytes: its elements in
// row-major (C) order, each as its itemsize bytes stored in the file (for
// quantized tensors, the integer representation), which is what torch's
// tensor.contiguous().view(-1) holds on a little-endian machine. Two tensors
// with equal digests hold the same values bit for bit, whatever their
// storages, offsets and strides.
//
// Memory: the caller's buffer, never O(tensor). Contiguous runs of the
// innermost dims are read in buffer-sized chunks; elements of
// non-contiguous views are gathered through a window over the storage.
//
// Thread safety: TensorDigest only reads their sources
// (RandomSource::ReadAt is thread-safe); the buffer must not be shared.
#ifndef ZEROFOLD_TORCH_DIGEST_H_
#define ZEROFOLD_TORCH_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "torch/checkpoint.h"
#include "torch/storage_source.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// An xxh3-128 value.
struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const Hash128& a, const Hash128& b) = default;
  // 32 lowercase hex digits, high half first (xxhsum's XXH128 form).
  std::string Hex() const;
};

// Streaming xxh3-128 (seed 0) of bytes given piece by piece. Not
// thread-safe. Aborts (std::bad_alloc) if xxHash cannot allocate its state.
class Xxh3Hasher {
 public:
  Xxh3Hasher();
  ~Xxh3Hasher();
  Xxh3Hasher(const Xxh3Hasher&) = delete;
  Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;
  void Reset();
  void Update(std::span<const std::byte> bytes);
  Hash128 Digest() const;

 private:
  void* state_;  // XXH3_state_t
};

// The smallest buffer TensorDigest accepts.
constexpr size_t kMinDigestBuffer = 64;

// The xxh3-128 of `tensor`'s logical bytes, read through `sources`, over
// the file `ckpt` was read from. `buffer` is scratch space of at least
// kMinDigestBuffer bytes; larger buffers mean fewer reads.
// Packed sub-byte dtypes (quint4x2, quint2x4) hash the bytes holding their
// elements, as torch's int_repr() holds them; kUnsupported (naming the
// tensor) for a packed view that is not contiguous from a byte boundary.
// Errors: kCorrupt naming the tensor (record) if its view leaves its storage
// or its extent overflows; the source's errors (kIO, kCorrupt "truncated")
// with the storage record; kInvalidArgument for a small buffer.
// REQUIRES: tensor is an element of ckpt.tensors.
Result<Hash128> TensorDigest(StorageSources& sources, const Checkpoint& ckpt,
                             const Tensor& tensor, std::span<std::byte> buffer);
// The same, reading through StorageSources of its own over `src`.
Result<Hash128> TensorDigest(const RandomSource& src, const Checkpoint& ckpt,
                             const Tensor& tensor, std::span<std::byte> buffer);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_DIGEST_H_
