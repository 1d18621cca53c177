// --verify for merge: reads every output file back with zerofold's own
// readers and checks, per entry, the name, dtype, shape and layout (torch:
// contiguous at offset 0; a tie in its owner's storage, every other entry in
// a storage of its own) and that the xxh3-128 of the tensor's logical bytes
// (verify/verify.h TensorDigest for torch output) equals the xxh3-128 of the
// same bytes assembled anew from the rank files.
#ifndef ZEROFOLD_GATHER_VERIFY_H_
#define ZEROFOLD_GATHER_VERIFY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "gather/assemble.h"
#include "gather/layout.h"
#include "gather/plan.h"
#include "torch/checkpoint.h"
#include "torch/digest.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::gather {

struct VerifyResult {
  size_t tensors = 0;  // entries checked
  uint64_t bytes = 0;  // output tensor bytes hashed
};

// Checks `files` (written in `format`; written[k] reads files[k]'s bytes,
// before they are committed) against the plan. Errors: kCorrupt
// (path: the output file, record: the entry name) for a missing or extra
// name, a dtype, shape or layout other than planned, or a digest mismatch
// (both digests in the message); errors of the readers and the assembler.
// progress gets the output bytes hashed per chunk.
Result<VerifyResult> VerifyMergeOutput(std::span<const RandomSource* const> written, const GatherPlan& plan,
                                       const MergeLayout& layout, std::span<const MergeOutputFile> files,
                                       MergeFormat format,
                                       TensorAssembler& assembler, const torch::ReadOptions& read,
                                       size_t buffer_bytes, const std::function<void(uint64_t)>& progress);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_VERIFY_H_
