// Assembling one merged tensor from its plan slices (zero/plan.h): each
// slice's elements are read from its rank file through a bounded buffer
// (positional reads), converted to the tensor's output dtype (exact
// widening of 16-bit values; --dtype rounding as torch's .to() rounds a
// contiguous tensor, torch/cast.h) and handed to a consumer, in order. Memory: two buffers of `buffer_bytes`, whatever the
// tensor's size.
//
// Not thread-safe (the buffers); the LoadedZero must outlive the assembler.
#ifndef ZEROFOLD_MERGE_ASSEMBLE_H_
#define ZEROFOLD_MERGE_ASSEMBLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ops/merge_load.h"
#include "torch/archive_writer.h"
#include "torch/cast.h"
#include "zero/plan.h"
#include "zerofold/status.h"

namespace zerofold::ops {

// True if the assembler converts elements of `from` into `to`: equal
// dtypes (copied), or two of float64, float32, float16 and bfloat16
// (rounded as torch 1.13's .to(), see torch/cast.h).
bool CanConvert(torch::DType from, torch::DType to);

class TensorAssembler {
 public:
  // REQUIRES: buffer_bytes >= 16 (it is raised to that).
  TensorAssembler(const LoadedZero& loaded, size_t buffer_bytes);

  // Calls emit with the tensor's bytes in its output dtype, row-major, in
  // chunks of at most buffer_bytes, and returns emit's first error. Errors
  // (path: the rank file; record: its storage record):
  //   kCorrupt      a slice names a storage the file lacks, or reaches past
  //                 the storage's bytes (with the numbers); the file is
  //                 shorter than its directory says;
  //   kUnsupported  no conversion between the slice's and the tensor's dtype;
  //   kInternal     the slices' counts do not add up to the tensor's numel;
  //   kIO           a read failed.
  Status Assemble(const zero::OutputTensor& tensor, const torch::EmitBytes& emit);

  // Source bytes read so far.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status AssembleSlice(const zero::OutputTensor& tensor, const zero::SourceSlice& slice,
                       const torch::EmitBytes& emit);

  const LoadedZero& loaded_;
  size_t buffer_bytes_;
  std::vector<std::byte> in_;
  std::vector<std::byte> out_;
  uint64_t bytes_read_ = 0;
  torch::NanRule nan_;    // of the tensor being assembled
  uint64_t element_ = 0;  // its next element, in C order
};

}  // namespace zerofold::ops

#endif  // ZEROFOLD_MERGE_ASSEMBLE_H_
