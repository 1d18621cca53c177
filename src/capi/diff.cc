// zf_diff: two checkpoints compared tensor by tensor (diff/diff.h).
#include <cmath>
#include <string>

#include "capi/call_env.h"
#include "capi/error.h"
#include "capi/options.h"
#include "diff/diff.h"
#include "diff/json.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

Status SetTolerance(diff::DiffOptions& options, double atol, double rtol, int equal_nan) {
  if (std::isnan(atol) || std::isnan(rtol)) return Status::InvalidArgument("a tolerance is NaN");
  options.atol.reset();
  options.rtol.reset();
  if (atol >= 0) options.atol = atol;
  if (rtol >= 0) options.rtol = rtol;
  options.equal_nan = equal_nan != 0;
  if (options.equal_nan && !options.close_mode())
    return Status::InvalidArgument("equal_nan needs a tolerance (atol or rtol >= 0)");
  return Status::OK();
}

namespace {

// What every zf_diff form hands out, emptied before anything can fail.
void ClearOutputs(zf_diff_report* report, char** json, size_t* json_length) {
  if (report != nullptr) *report = zf_diff_report{};
  if (json != nullptr) *json = nullptr;
  if (json_length != nullptr) *json_length = 0;
}

// The body of every zf_diff form, the outputs cleared: diffs on o.env under
// o's progress.
Status Diff(const char* a, const char* b, const zf_diff_options& o, zf_diff_report* report, char** json,
            size_t* json_length) {
  zf_diff_report local{};
  zf_diff_report* r = report != nullptr ? report : &local;
  if (a == nullptr || b == nullptr) return Status::InvalidArgument("A and B must both be paths");
  diff::DiffOptions options = o.diff;
  CallEnv call(o.env, "");
  if (o.progress != nullptr)
    options.progress = [&](uint64_t done, uint64_t total) {
      call.Progress(o.progress, o.progress_user, "diff", done, total);
    };
  Result<diff::DiffReport> d = diff::DiffPaths(call.env(), a, b, options);
  if (!d.ok()) return call.Finish(d.status());
  r->tensors = d->tensors.size();
  r->different = d->different;
  r->only_in_a = d->only_a.size();
  r->only_in_b = d->only_b.size();
  r->same = d->same() ? 1 : 0;
  if (json == nullptr) return Status::OK();
  ZF_ASSIGN_OR_RETURN(std::string doc, diff::DiffReportJson(*d, options));
  HandOut(doc, json, json_length);
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_diff_env(const zf_env* env, const char* a, const char* b, double atol, double rtol,
                               int equal_nan, zf_diff_report* report, char** json, size_t* json_length,
                               zf_error* err) noexcept {
  return zerofold::capi::Guard(err, [&]() -> zerofold::Status {
    zerofold::capi::ClearOutputs(report, json, json_length);
    zf_diff_options o;
    o.env = env;
    ZF_TRY(zerofold::capi::SetTolerance(o.diff, atol, rtol, equal_nan));
    return zerofold::capi::Diff(a, b, o, report, json, json_length);
  });
}

extern "C" zf_code zf_diff(const char* a, const char* b, double atol, double rtol, int equal_nan,
                           zf_diff_report* report, char** json, size_t* json_length, zf_error* err) noexcept {
  return zf_diff_env(nullptr, a, b, atol, rtol, equal_nan, report, json, json_length, err);
}

extern "C" zf_code zf_diff_with(const char* a, const char* b, const zf_diff_options* options, zf_diff_report* report,
                                char** json, size_t* json_length, zf_error* err) noexcept {
  const zf_diff_options defaults;
  return zerofold::capi::Guard(err, [&] {
    zerofold::capi::ClearOutputs(report, json, json_length);
    return zerofold::capi::Diff(a, b, options != nullptr ? *options : defaults, report, json, json_length);
  });
}
