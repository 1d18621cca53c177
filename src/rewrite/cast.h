// --dtype for torch output: which output storages are cast, and copying a
// storage's bytes with the cast through a bounded buffer (element rules in
// torch/cast.h).
//
// A cast changes storages, not views: an output storage (a cluster of
// overlapping views, see plan/shrink_plan.h) whose views are of a floating
// dtype other than the target is converted element by element, once, so
// tied views stay tied, at the same element offsets and strides, in a
// storage of the target's item size. Integer, bool, complex and quantized
// tensors, and those already of the target dtype, are copied unchanged.
#ifndef ZEROFOLD_REWRITE_CAST_H_
#define ZEROFOLD_REWRITE_CAST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "plan/shrink_plan.h"
#include "torch/cast.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::rewrite {

// The dtypes --dtype accepts: torch's names bfloat16, float16, float32, and
// the short names users type (bf16; fp16, half; fp32, float). nullopt for
// any other text.
std::optional<torch::DType> ParseCastTarget(std::string_view name);
// The accepted names, for messages.
inline constexpr const char* kCastTargetNames = "bfloat16 (bf16), float16 (fp16, half) or float32 (fp32, float)";

// The dtype a tensor of `dtype` is written as under `target`: the target for
// float64/32/16 and bfloat16 tensors, else its own. kUnsupported for a
// floating dtype the cast does not convert (float8, float4 variants).
Result<torch::DType> OutputDType(torch::DType dtype, std::optional<torch::DType> target);

// The tensor's logical bytes as `out` (Tensor::nbytes when out is its own
// dtype, packed sub-byte types included), saturating.
uint64_t OutputNbytes(const torch::Tensor& tensor, torch::DType out);

struct StorageCast {
  torch::DType from = torch::DType::kUInt8;
  torch::DType to = torch::DType::kUInt8;  // == from: copied unchanged
  torch::NanRule nan;
  uint64_t out_nbytes = 0;                 // the storage's size after the cast
  bool cast() const { return from != to; }
};

// Per output storage of `plan` (over ckpt's tensors): its cast. A storage's
// NaN rule is its first view's (torch::TorchNanRule), which is exact for
// storages of one view (or of one view under several names); the float64
// tail rule applies only to those. Errors: kUnsupported (record: the tensor) when an
// output storage mixes dtypes and would be cast, or a view's floating dtype
// cannot be cast.
Result<std::vector<StorageCast>> PlanStorageCasts(const torch::Checkpoint& ckpt, const plan::ShrinkPlan& plan,
                                                  std::optional<torch::DType> target);

// Per storage: the dtype it is cast to, or nullopt (RetargetTensors' casts).
std::vector<std::optional<torch::DType>> CastTargets(std::span<const StorageCast> casts);

// Copies byte ranges of a source, cast, through one buffer. Not thread-safe.
class CastCopier {
 public:
  explicit CastCopier(size_t buffer_bytes);
  // Reads nbytes at `offset` of src and emits them cast as `cast` says, in
  // chunks of whole elements. Read errors carry `record` and src's name.
  // REQUIRES: nbytes is a whole number of cast.from elements.
  Status Copy(const RandomSource& src, uint64_t offset, uint64_t nbytes, const StorageCast& cast,
              std::string_view record, const std::function<Status(std::span<const std::byte>)>& emit);

 private:
  std::vector<std::byte> in_;
  std::vector<std::byte> out_;
};

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_CAST_H_
