// The option handles of the C API (zerofold.h): the library's options plus
// what only the C entry points decide (in place, force, format, shards) and
// the caller's progress callback.
#ifndef ZEROFOLD_CAPI_OPTIONS_H_
#define ZEROFOLD_CAPI_OPTIONS_H_

#include <cstdint>
#include <optional>

#include "diff/diff.h"
#include "io/read_plan.h"
#include "merge/merge.h"
#include "output/parts.h"
#include "quant/elements.h"
#include "rewrite/shrink.h"
#include "scan/scan.h"
#include "zerofold/zerofold.h"

struct zf_shrink_options {
  // dry_run, verify, keep_unsafe, buffer_bytes, dtype, select, zstd, read
  // limits; progress stays empty.
  zerofold::rewrite::ShrinkOptions shrink;
  bool in_place = false;
  bool force = false;
  bool dedupe_tied = false;
  // Set: the output format (--to). Unset: torch for zf_shrink, OUT's name
  // for zf_convert.
  std::optional<bool> to_safetensors;
  // Set: shards into a folder OUT of at most this many bytes each.
  std::optional<uint64_t> max_shard_bytes;
  zerofold::output::PartSpec part;  // kAll unless set
  // Set: zf_convert decodes quantized weights into this dtype (--dequantize).
  std::optional<zerofold::quant::Target> dequantize;
  zf_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  zf_read_fn reads = nullptr;  // the read plan's receiver
  void* reads_user = nullptr;
  const zf_env* env = nullptr;  // null: the operating system's files
};

struct zf_merge_options {
  // Every merge option; progress stays empty.
  zerofold::merge::MergeOptions merge;
  zf_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  zf_read_fn reads = nullptr;  // the read plan's receiver
  void* reads_user = nullptr;
  const zf_env* env = nullptr;  // null: the operating system's files
};

struct zf_diff_options {
  // Tolerances, equal_nan, only, read limits; progress stays empty.
  zerofold::diff::DiffOptions diff;
  zf_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  const zf_env* env = nullptr;  // null: the operating system's files
};

struct zf_scan_options {
  // hash, read limits, buffer_bytes; progress stays empty.
  zerofold::scan::ScanOptions scan;
  zf_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  const zf_env* env = nullptr;  // null: the operating system's files
};

namespace zerofold::capi {

// Sets `options`' tolerances as zf_diff takes them (negative: not given);
// kInvalidArgument for a NaN, or equal_nan without a tolerance.
Status SetTolerance(diff::DiffOptions& options, double atol, double rtol, int equal_nan);

// Hands each range of `plan` to `fn` (zf_read_fn); a nonzero return is
// kCancelled. OK when fn is null.
Status DeliverReads(const io::ReadPlan& plan, zf_read_fn fn, void* user);

}  // namespace zerofold::capi

#endif  // ZEROFOLD_CAPI_OPTIONS_H_
