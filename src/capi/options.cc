#include "capi/options.h"

#include <new>
#include <string>
#include <utility>
#include <vector>

#include "capi/error.h"
#include "io/zstd_stream.h"
#include "rewrite/cast.h"

namespace zerofold::capi {

namespace {

// The CLI's --buffer-size range.
constexpr uint64_t kMinBufferBytes = uint64_t{4} << 10;
constexpr uint64_t kMaxBufferBytes = uint64_t{4} << 30;

Status CheckBufferBytes(uint64_t bytes) {
  if (bytes < kMinBufferBytes || bytes > kMaxBufferBytes || !std::in_range<size_t>(bytes))
    return Status::InvalidArgument("buffer_bytes " + std::to_string(bytes) + " is outside 4096 .. 4294967296");
  return Status::OK();
}

Status CheckShardBytes(uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("max_shard_size must be at least 1 byte");
  return Status::OK();
}

// `name` parsed as a cast target; nullopt for NULL or "" (every dtype kept).
Result<std::optional<torch::DType>> ParseDType(const char* name, const char* which) {
  if (name == nullptr || *name == '\0') return std::optional<torch::DType>();
  std::optional<torch::DType> d = rewrite::ParseCastTarget(name);
  if (!d) return Status::InvalidArgument(std::string(which) + " takes " + rewrite::kCastTargetNames + ", not '" + name + "'");
  return d;
}

// `text` parsed as --part; kAll for NULL or "".
Result<output::PartSpec> ParsePartText(const char* text) {
  if (text == nullptr || *text == '\0') return output::PartSpec{};
  return output::ParsePart(text);
}

Status NullOptions() { return Status::InvalidArgument("the options handle is NULL"); }

// zf_*_options_add_only: one more --only pattern into `patterns`.
Status AddOnly(std::vector<std::string>& patterns, const char* pattern) {
  if (pattern == nullptr || *pattern == '\0') return Status::InvalidArgument("only needs a pattern");
  patterns.emplace_back(pattern);
  return Status::OK();
}

// A numeric option by its CLI flag's name: a read limit, or (`zstd`
// non-null) a zstd option.
Status SetNumber(torch::ReadOptions* read, io::ZstdOptions* zstd, const char* name, uint64_t value) {
  if (name == nullptr) return Status::InvalidArgument("the option name is NULL");
  Status s = torch::SetReadLimit(read, name, value);
  if (s.code() == Code::kNotFound && zstd != nullptr) s = io::SetZstdOption(zstd, name, value);
  if (s.code() == Code::kNotFound)
    return Status::InvalidArgument(std::string("no numeric option named '") + name + "'");
  return s;
}

}  // namespace

}  // namespace zerofold::capi

using zerofold::Result;
using zerofold::Status;
using zerofold::capi::Guard;

namespace zerofold::capi {

Status DeliverReads(const io::ReadPlan& plan, zf_read_fn fn, void* user) {
  if (fn == nullptr) return Status::OK();
  for (const io::ReadRange& r : plan.ranges())
    if (fn(user, r.path.c_str(), r.offset, r.length) != 0) return Status::Cancelled("the read plan's callback stopped the call");
  return Status::OK();
}

}  // namespace zerofold::capi

extern "C" {

// ---- zf_shrink_options ----

zf_shrink_options* zf_shrink_options_create(void) noexcept {
  try {
    return new zf_shrink_options();
  } catch (...) {
    return nullptr;
  }
}

void zf_shrink_options_destroy(zf_shrink_options* options) noexcept { delete options; }

void zf_shrink_options_set_dry_run(zf_shrink_options* options, int on) noexcept {
  if (options) options->shrink.dry_run = on != 0;
}
void zf_shrink_options_set_verify(zf_shrink_options* options, int on) noexcept {
  if (options) options->shrink.verify = on != 0;
}
void zf_shrink_options_set_in_place(zf_shrink_options* options, int on) noexcept {
  if (options) options->in_place = on != 0;
}
void zf_shrink_options_set_force(zf_shrink_options* options, int on) noexcept {
  if (options) options->force = on != 0;
}
void zf_shrink_options_set_keep_unsafe(zf_shrink_options* options, int on) noexcept {
  if (options) options->shrink.keep_unsafe = on != 0;
}
void zf_shrink_options_set_to_safetensors(zf_shrink_options* options, int on) noexcept {
  if (options) options->to_safetensors = on != 0;
}
void zf_shrink_options_set_dedupe_tied(zf_shrink_options* options, int on) noexcept {
  if (options) options->dedupe_tied = on != 0;
}
void zf_shrink_options_set_env(zf_shrink_options* options, const zf_env* env) noexcept {
  if (options) options->env = env;
}

zf_code zf_shrink_options_set_number(zf_shrink_options* options, const char* name, uint64_t value,
                                     zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::SetNumber(&options->shrink.read, &options->shrink.zstd, name, value);
  });
}

zf_code zf_shrink_options_set_dtype(zf_shrink_options* options, const char* name, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    Result<std::optional<zerofold::torch::DType>> d = zerofold::capi::ParseDType(name, "dtype");
    if (!d.ok()) return d.status();
    options->shrink.dtype = *d;
    return Status::OK();
  });
}

zf_code zf_shrink_options_set_dequantize(zf_shrink_options* options, const char* dtype, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    Result<std::optional<zerofold::torch::DType>> d = zerofold::capi::ParseDType(dtype, "dequantize");
    if (!d.ok()) return d.status();
    if (!*d) {
      options->dequantize.reset();
    } else if (**d == zerofold::torch::DType::kBFloat16) {
      options->dequantize = zerofold::quant::Target::kBFloat16;
    } else if (**d == zerofold::torch::DType::kFloat32) {
      options->dequantize = zerofold::quant::Target::kFloat32;
    } else {
      return Status::InvalidArgument("dequantize takes bfloat16 (bf16) or float32 (fp32), not '" + std::string(dtype) + "'");
    }
    return Status::OK();
  });
}

zf_code zf_shrink_options_set_select(zf_shrink_options* options, const char* keypath, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    options->shrink.select = keypath == nullptr ? "" : keypath;
    return Status::OK();
  });
}

zf_code zf_shrink_options_set_max_shard_size(zf_shrink_options* options, uint64_t bytes, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    ZF_TRY(zerofold::capi::CheckShardBytes(bytes));
    options->max_shard_bytes = bytes;
    return Status::OK();
  });
}

zf_code zf_shrink_options_set_buffer_bytes(zf_shrink_options* options, uint64_t bytes, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    ZF_TRY(zerofold::capi::CheckBufferBytes(bytes));
    options->shrink.buffer_bytes = static_cast<size_t>(bytes);
    return Status::OK();
  });
}

zf_code zf_shrink_options_set_part(zf_shrink_options* options, const char* part, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    Result<zerofold::output::PartSpec> p = zerofold::capi::ParsePartText(part);
    if (!p.ok()) return p.status();
    options->part = *p;
    return Status::OK();
  });
}

void zf_shrink_options_set_progress(zf_shrink_options* options, zf_progress_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->progress = fn;
  options->progress_user = user;
}

void zf_shrink_options_set_read_plan(zf_shrink_options* options, zf_read_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->reads = fn;
  options->reads_user = user;
}

// ---- zf_merge_options ----

zf_merge_options* zf_merge_options_create(void) noexcept {
  try {
    return new zf_merge_options();
  } catch (...) {
    return nullptr;
  }
}

void zf_merge_options_destroy(zf_merge_options* options) noexcept { delete options; }

void zf_merge_options_set_dry_run(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.dry_run = on != 0;
}
void zf_merge_options_set_verify(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.verify = on != 0;
}
void zf_merge_options_set_force(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.force = on != 0;
}
void zf_merge_options_set_exclude_frozen(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.exclude_frozen = on != 0;
}
void zf_merge_options_set_keep_unsafe(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.keep_unsafe = on != 0;
}
void zf_merge_options_set_to_safetensors(zf_merge_options* options, int on) noexcept {
  using zerofold::merge::MergeFormat;
  if (options) options->merge.format = on != 0 ? MergeFormat::kSafetensors : MergeFormat::kTorch;
}

zf_code zf_merge_options_set_dtype(zf_merge_options* options, const char* name, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    Result<std::optional<zerofold::torch::DType>> d = zerofold::capi::ParseDType(name, "dtype");
    if (!d.ok()) return d.status();
    options->merge.dtype = *d;
    return Status::OK();
  });
}

zf_code zf_merge_options_set_tag(zf_merge_options* options, const char* tag, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    if (tag == nullptr || *tag == '\0') options->merge.tag.reset();
    else options->merge.tag = std::string(tag);
    return Status::OK();
  });
}

zf_code zf_merge_options_set_select(zf_merge_options* options, const char* prefix, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    if (prefix == nullptr) options->merge.select.reset();
    else options->merge.select = std::string(prefix);
    return Status::OK();
  });
}

zf_code zf_merge_options_set_hf_base(zf_merge_options* options, const char* base, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    if (base == nullptr || *base == '\0') options->merge.hf_base.reset();
    else options->merge.hf_base = std::string(base);
    return Status::OK();
  });
}

zf_code zf_merge_options_add_hf_table(zf_merge_options* options, const char* path, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    if (path == nullptr || *path == '\0') return Status::InvalidArgument("hf_table: a table file's path, not empty");
    options->merge.hf_tables.push_back(path);
    return Status::OK();
  });
}

void zf_merge_options_set_drop_unmapped(zf_merge_options* options, int on) noexcept {
  if (options) options->merge.drop_unmapped = on != 0;
}

zf_code zf_shrink_options_add_only(zf_shrink_options* options, const char* pattern, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::AddOnly(options->shrink.only, pattern);
  });
}

zf_code zf_merge_options_add_only(zf_merge_options* options, const char* pattern, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::AddOnly(options->merge.only, pattern);
  });
}

zf_code zf_merge_options_set_max_shard_size(zf_merge_options* options, uint64_t bytes, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    ZF_TRY(zerofold::capi::CheckShardBytes(bytes));
    options->merge.max_shard_bytes = bytes;
    return Status::OK();
  });
}

zf_code zf_merge_options_set_buffer_bytes(zf_merge_options* options, uint64_t bytes, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    ZF_TRY(zerofold::capi::CheckBufferBytes(bytes));
    options->merge.buffer_bytes = static_cast<size_t>(bytes);
    return Status::OK();
  });
}

zf_code zf_merge_options_set_part(zf_merge_options* options, const char* part, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    Result<zerofold::output::PartSpec> p = zerofold::capi::ParsePartText(part);
    if (!p.ok()) return p.status();
    options->merge.part = *p;
    return Status::OK();
  });
}

void zf_merge_options_set_env(zf_merge_options* options, const zf_env* env) noexcept {
  if (options) options->env = env;
}

zf_code zf_merge_options_set_number(zf_merge_options* options, const char* name, uint64_t value,
                                    zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::SetNumber(&options->merge.read, nullptr, name, value);
  });
}

void zf_merge_options_set_progress(zf_merge_options* options, zf_progress_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->progress = fn;
  options->progress_user = user;
}

void zf_merge_options_set_read_plan(zf_merge_options* options, zf_read_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->reads = fn;
  options->reads_user = user;
}

zf_diff_options* zf_diff_options_create(void) noexcept {
  try {
    return new zf_diff_options();
  } catch (...) {
    return nullptr;
  }
}

void zf_diff_options_destroy(zf_diff_options* options) noexcept { delete options; }

zf_code zf_diff_options_set_tolerance(zf_diff_options* options, double atol, double rtol, int equal_nan,
                                      zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::SetTolerance(options->diff, atol, rtol, equal_nan);
  });
}

zf_code zf_diff_options_add_only(zf_diff_options* options, const char* pattern, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::AddOnly(options->diff.only, pattern);
  });
}

zf_code zf_diff_options_set_number(zf_diff_options* options, const char* name, uint64_t value,
                                   zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    return zerofold::capi::SetNumber(&options->diff.read, nullptr, name, value);
  });
}

void zf_diff_options_set_progress(zf_diff_options* options, zf_progress_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->progress = fn;
  options->progress_user = user;
}

void zf_diff_options_set_env(zf_diff_options* options, const zf_env* env) noexcept {
  if (options) options->env = env;
}


// ---- zf_scan_options ----

zf_scan_options* zf_scan_options_create(void) noexcept {
  try {
    return new zf_scan_options();
  } catch (...) {
    return nullptr;
  }
}

void zf_scan_options_destroy(zf_scan_options* options) noexcept { delete options; }

void zf_scan_options_set_hash(zf_scan_options* options, int on) noexcept {
  if (options != nullptr) options->scan.hash = on != 0;
}

zf_code zf_scan_options_set_number(zf_scan_options* options, const char* name, uint64_t value,
                                   zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    if (options == nullptr) return zerofold::capi::NullOptions();
    if (name != nullptr && std::string(name) == "buffer_bytes") {
      ZF_TRY(zerofold::capi::CheckBufferBytes(value));
      options->scan.buffer_bytes = static_cast<size_t>(value);
      return Status::OK();
    }
    return zerofold::capi::SetNumber(&options->scan.read, nullptr, name, value);
  });
}

void zf_scan_options_set_progress(zf_scan_options* options, zf_progress_fn fn, void* user) noexcept {
  if (options == nullptr) return;
  options->progress = fn;
  options->progress_user = user;
}

void zf_scan_options_set_env(zf_scan_options* options, const zf_env* env) noexcept {
  if (options != nullptr) options->env = env;
}

}  // extern "C"
