// Element conversions merge needs on the way from rank files to output:
// the exact widening of float16 and bfloat16 to float32 (frozen params and
// floating buffers stored in 16 bits), and copies between equal dtypes
// (fp32 master weights, integer buffers). Pure functions, thread-safe.
#ifndef ZEROFOLD_OPS_MERGE_CONVERT_H_
#define ZEROFOLD_OPS_MERGE_CONVERT_H_

#include <cstddef>
#include <span>

#include "torch/dtype.h"
#include "zerofold/status.h"

namespace zerofold::ops {

// True if ConvertElements converts `from` to `to`.
bool CanConvert(torch::DType from, torch::DType to);

// Converts the little-endian elements of `from` in src into `to` in dst,
// as torch 1.13's tensor.to(to) does: float16 -> float32 exact, a NaN gets
// the quiet bit set (c10::Half); bfloat16 -> float32 exact, bits shifted;
// equal dtypes copy. kInvalidArgument if src is not a whole number of
// elements or dst does not hold exactly as many; kUnsupported for other
// pairs (CanConvert false).
Status ConvertElements(torch::DType from, torch::DType to, std::span<const std::byte> src, std::span<std::byte> dst);

}  // namespace zerofold::ops

#endif  // ZEROFOLD_OPS_MERGE_CONVERT_H_
