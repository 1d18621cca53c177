// Tensor-by-tensor verification of two torch files (shrink --verify,
// convert --verify, zf_verify): every tensor's dtype, shape and digest
// (torch/digest.h: the xxh3-128 of its logical bytes), whatever the
// storages, offsets and strides.
//
// Memory: the caller's buffer, never O(tensor). Thread safety: VerifyTensors
// only reads its sources (RandomSource::ReadAt is thread-safe); the buffer
// must not be shared.
#ifndef ZEROFOLD_VERIFY_VERIFY_H_
#define ZEROFOLD_VERIFY_VERIFY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "torch/checkpoint.h"
#include "torch/digest.h"
#include "torch/storage_source.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::verify {

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
  // model/select.h takes it and shrink --select writes it); "" the whole input.
  std::string select;
  // ... and with the tensors matching these patterns (--only), if any.
  std::vector<std::string> only;
};

// Reads the torch file `output` and compares its tensors with `expected`,
// the model (of `input`'s bytes) it was written from, as VerifyTensors, with
// a digest buffer of buffer_bytes. Errors name the file they concern.
Result<VerifyReport> VerifyOutput(const RandomSource& input, const torch::Checkpoint& expected,
                                  const RandomSource& output, const torch::ReadOptions& read, size_t buffer_bytes);

// Reads the torch file `output` (shrink --verify: the output written, before
// it is committed) and compares its tensors with those of `input`, as
// VerifyTensors. Errors name the file they concern.
Result<VerifyReport> VerifyWritten(const RandomSource& input, const RandomSource& output,
                                   const VerifyOptions& options);

}  // namespace zerofold::verify

#endif  // ZEROFOLD_VERIFY_VERIFY_H_
