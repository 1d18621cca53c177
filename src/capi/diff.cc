// zf_diff: two checkpoints compared tensor by tensor (diff/diff.h).
#include <cmath>
#include <string>

#include "capi/call_env.h"
#include "capi/error.h"
#include "diff/diff.h"
#include "diff/json.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

extern "C" zf_code zf_diff_env(const zf_env* env, const char* a, const char* b, double atol, double rtol,
                               int equal_nan, zf_diff_report* report, char** json, size_t* json_length,
                               zf_error* err) noexcept {
  using zerofold::Status;
  if (json != nullptr) *json = nullptr;
  if (json_length != nullptr) *json_length = 0;
  return zerofold::capi::Guard(err, [&]() -> Status {
    zf_diff_report local{};
    zf_diff_report* r = report != nullptr ? report : &local;
    *r = zf_diff_report{};
    if (a == nullptr || b == nullptr) return Status::InvalidArgument("A and B must both be paths");
    if (std::isnan(atol) || std::isnan(rtol)) return Status::InvalidArgument("a tolerance is NaN");
    zerofold::diff::DiffOptions options;
    if (atol >= 0) options.atol = atol;
    if (rtol >= 0) options.rtol = rtol;
    options.equal_nan = equal_nan != 0;
    if (options.equal_nan && !options.close_mode())
      return Status::InvalidArgument("equal_nan needs a tolerance (atol or rtol >= 0)");
    zerofold::capi::CallEnv call(env, "");
    ZF_ASSIGN_OR_RETURN(zerofold::diff::DiffReport d, zerofold::diff::DiffPaths(call.env(), a, b, options));
    r->tensors = d.tensors.size();
    r->different = d.different;
    r->only_in_a = d.only_a.size();
    r->only_in_b = d.only_b.size();
    r->same = d.same() ? 1 : 0;
    if (json == nullptr) return Status::OK();
    ZF_ASSIGN_OR_RETURN(std::string doc, zerofold::diff::DiffReportJson(d, options));
    zerofold::capi::HandOut(doc, json, json_length);
    return Status::OK();
  });
}

extern "C" zf_code zf_diff(const char* a, const char* b, double atol, double rtol, int equal_nan,
                           zf_diff_report* report, char** json, size_t* json_length, zf_error* err) noexcept {
  return zf_diff_env(nullptr, a, b, atol, rtol, equal_nan, report, json, json_length, err);
}
