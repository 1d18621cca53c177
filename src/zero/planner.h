// Internal to src/zero: the ZeRO merge planner's working state and the
// checks its steps share. plan.cc runs the steps (checks, ordering),
// params.cc places the trainable params (stage 0, 1/2, 3, universal),
// module_tensors.cc takes buffers, frozen params and ties from the
// model states' `module`.
#ifndef ZEROFOLD_ZERO_PLANNER_H_
#define ZEROFOLD_ZERO_PLANNER_H_

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "zero/plan.h"

namespace zerofold::zero::planning {

using torch::DType;

// DeepSpeed pads every stage-1/2 flat group to a multiple of
// nccl_start_alignment_factor x world size (stage_1_and_2.py, bf16_optimizer.py).
inline constexpr uint64_t kNcclStartAlignmentFactor = 2;

// kCorrupt naming `file` and, when given, `record`.
Status Corrupt(std::string message, std::string_view file, std::string_view record = {});

// Elements of a recorded shape; kCorrupt for a negative size or overflow.
Result<uint64_t> Numel(const std::vector<int64_t>& shape, std::string_view what, std::string_view file,
                       std::string_view record);

// Floating dtypes whose elements convert one by one. float4_e2m1fn_x2 packs
// two values per element, so a tensor of it keeps its dtype.
bool IsFloating(DType d);

// The dtype a tensor stored as `source` comes out as (README.md: dtypes).
DType OutputDType(DType source, const PlanOptions& options);

// True when the view's elements in row-major order are consecutive in its
// storage. Size-1 dims may have any stride; empty tensors are contiguous.
bool IsContiguous(const TensorMeta& t);

// Checks a tensor that a slice will read `len` elements from: contiguous,
// a non-negative offset, no overflow. `what` names it in messages.
Status CheckSource(const TensorMeta& t, uint64_t len, std::string_view what, std::string_view file,
                   std::string_view record, Code not_contiguous);

// A rank's fp32 partition: a flat floating tensor. Returns its length.
Result<uint64_t> CheckPartition(const TensorMeta& t, std::string_view what, std::string_view file);

// "fp32_flat_groups[G] of rank R" (or single_partition_of_fp32_groups[G]).
std::string PartitionName(const OptimStates& o, size_t group);

// "rank 0" or "ranks 0-N".
std::string RankList(size_t n);

// One piece of a sequence laid end to end: `len` elements of `tensor`.
struct Part {
  uint32_t file = 0;
  const TensorMeta* tensor = nullptr;
  uint64_t len = 0;
  std::optional<SourceKind> source;  // unset: the sequence's own
};

// Parts laid end to end, cut into slices. Take() calls must come with
// non-decreasing `begin`, so a whole pass over many params costs
// O(params + parts).
class EndToEnd {
 public:
  EndToEnd(SourceKind source, std::vector<Part> parts) : source_(source), parts_(std::move(parts)) {
    for (const Part& p : parts_) total_ += p.len;  // callers checked the sum
  }
  uint64_t total() const { return total_; }

  // Appends the slices of elements [begin, begin + count).
  // REQUIRES: begin + count <= total(); begin >= the previous call's begin.
  void Take(uint64_t begin, uint64_t count, std::vector<SourceSlice>* out) {
    while (count > 0) {
      while (begin >= start_ + parts_[index_].len) {
        start_ += parts_[index_].len;
        ++index_;
      }
      const Part& p = parts_[index_];
      uint64_t within = begin - start_;
      uint64_t n = std::min(count, p.len - within);
      out->push_back(SourceSlice{p.source.value_or(source_), p.file, p.tensor->storage,
                                 static_cast<uint64_t>(p.tensor->storage_offset) + within, n, p.tensor->dtype});
      begin += n;
      count -= n;
    }
  }

 private:
  SourceKind source_;
  std::vector<Part> parts_;
  uint64_t total_ = 0;
  size_t index_ = 0;
  uint64_t start_ = 0;  // first element of parts_[index_]
};

// The planner's working state.
class Planner {
 public:
  Planner(const ZeroCheckpoint& ckpt, const PlanOptions& options) : ckpt_(ckpt), options_(options) {}

  Result<MergePlan> Run();

 private:
  Status CheckRanks();
  Status CheckModelStates();
  Status IndexModule();
  Status PlanStage12Params();
  Status CrossCheckMappings(size_t group, const std::vector<NamedShape>& shapes,
                            const std::vector<std::vector<SourceSlice>>& placed);
  Status PlanStage3Params();
  Status PlanStage0Params();
  Status PlanUniversalParams();
  Status CheckParallelism() const;
  Status DeriveParamShapes();
  Status PlanBuffers();
  Status PlanTies();
  Status PlanFrozen();
  Status ResolveTies();
  void Order();

  Status AddParam(const NamedShape& p, std::vector<SourceSlice> slices, DType dtype);
  Status AddFromModule(const std::string& name, TensorKind kind);
  bool Known(const std::string& name) const { return output_index_.count(name) || tie_index_.count(name); }
  const ModelStates& ms() const { return ckpt_.model_states[0]; }
  // The recorded param_shapes, or those derived from param_slice_mappings.
  const std::vector<std::vector<NamedShape>>& shapes() const {
    return ms().param_shapes_recorded ? ms().param_shapes : derived_shapes_;
  }

  const ZeroCheckpoint& ckpt_;
  const PlanOptions& options_;
  uint32_t world_size_ = 0;
  int stage_ = 0;
  bool bf16_optimizer_ = false;

  std::unordered_map<std::string, size_t> module_index_;   // name -> index in ms().module
  std::vector<OutputTensor> outputs_;                       // in planning order
  std::unordered_map<std::string, size_t> output_index_;
  std::vector<Tie> ties_;
  std::unordered_map<std::string, size_t> tie_index_;
  std::vector<std::string> leftovers_;                      // module names after params and buffers
  std::vector<std::vector<NamedShape>> derived_shapes_;
  MergePlan plan_;
};

}  // namespace zerofold::zero::planning

#endif  // ZEROFOLD_ZERO_PLANNER_H_
