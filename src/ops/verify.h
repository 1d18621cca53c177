// Tensor digests and tensor-by-tensor verification of two torch files.
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
// Thread safety: TensorDigest and VerifyTensors only read their sources
// (RandomSource::ReadAt is thread-safe); the buffer must not be shared.
#ifndef ZEROFOLD_OPS_VERIFY_H_
#define ZEROFOLD_OPS_VERIFY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "torch/checkpoint.h"
#include "torch/storage_source.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::ops {

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
Result<Hash128> TensorDigest(torch::StorageSources& sources, const torch::Checkpoint& ckpt,
                             const torch::Tensor& tensor, std::span<std::byte> buffer);
// The same, reading through StorageSources of its own over `src`.
Result<Hash128> TensorDigest(const RandomSource& src, const torch::Checkpoint& ckpt,
                             const torch::Tensor& tensor, std::span<std::byte> buffer);

// kCorrupt (path: b's, record: x's name) unless y holds x's values: the
// same dtype, shape and digest, whatever their layouts; read errors as
// TensorDigest's.
Status CompareTensorValues(const RandomSource& a, const torch::Checkpoint& ckpt_a, const torch::Tensor& x,
                           const RandomSource& b, const torch::Checkpoint& ckpt_b, const torch::Tensor& y,
                           std::span<std::byte> buffer);

struct VerifyReport {
  size_t tensors = 0;   // tensors compared (a tied tensor counts once per name)
  uint64_t bytes = 0;   // logical bytes compared, the sum of their nbytes
};

// Compares every tensor of `a` with the tensor at the same position in `b`:
// the same name, dtype, shape, stride, requires_grad, Parameter-ness and
// digest (storages and offsets may differ). kCorrupt with b's path and the
// tensor's name as record at the first difference, saying what differs;
// read errors as TensorDigest's, with the path of the file that failed.
Result<VerifyReport> VerifyTensors(const RandomSource& a, const torch::Checkpoint& ckpt_a,
                                   const RandomSource& b, const torch::Checkpoint& ckpt_b,
                                   std::span<std::byte> buffer);

struct VerifyOptions {
  torch::ReadOptions read;
  size_t buffer_bytes = size_t{4} << 20;  // scratch for TensorDigest
  // Compare the output with this subtree of the input (a KEYPATH, as
  // ops/select.h takes it and shrink --select writes it); "" the whole input.
  std::string select;
};

// Reads the torch file `output` (shrink --verify: the output written, before
// it is committed) and compares its tensors with those of `input`, as
// VerifyTensors. Errors name the file they concern.
Result<VerifyReport> VerifyWritten(const RandomSource& input, const RandomSource& output,
                                   const VerifyOptions& options);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_VERIFY_H_
