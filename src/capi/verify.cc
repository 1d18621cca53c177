// zf_verify: two torch files compared tensor by tensor (verify/verify.h).
#include <memory>
#include <string>

#include "capi/call_env.h"
#include "capi/error.h"
#include "model/listing.h"
#include "verify/verify.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

// kUnsupported for a safetensors file, which verify/verify.h does not read;
// other files go on to the torch reader, which names what is wrong.
Status RequireTorch(const RandomSource& src) {
  Result<model::FileFormat> format = model::SniffFormat(src);
  if (format.ok() && *format == model::FileFormat::kSafetensors)
    return Status::Unsupported("zf_verify compares torch files; this is a safetensors file").WithPath(src.name());
  return Status::OK();
}

Status Verify(Env* env, const std::string& a, const std::string& b, zf_verify_report* report) {
  Result<std::unique_ptr<RandomSource>> a_src = env->OpenRandom(a);
  if (!a_src.ok()) return Status(a_src.status()).WithPath(a);
  ZF_TRY(RequireTorch(**a_src));
  Result<std::unique_ptr<RandomSource>> b_src = env->OpenRandom(b);
  if (!b_src.ok()) return Status(b_src.status()).WithPath(b);
  ZF_TRY(RequireTorch(**b_src));
  Result<verify::VerifyReport> r = verify::VerifyWritten(**a_src, **b_src, verify::VerifyOptions{});
  if (!r.ok()) return r.status();
  report->tensors = r->tensors;
  report->bytes = r->bytes;
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_verify_env(const zf_env* env, const char* a, const char* b, zf_verify_report* report,
                                 zf_error* err) noexcept {
  using zerofold::Status;
  return zerofold::capi::Guard(err, [&]() -> Status {
    zf_verify_report local{};
    zf_verify_report* r = report != nullptr ? report : &local;
    *r = zf_verify_report{};
    if (a == nullptr || b == nullptr) return Status::InvalidArgument("A and B must both be paths");
    zerofold::capi::CallEnv call(env, "");
    return zerofold::capi::Verify(call.env(), a, b, r);
  });
}

extern "C" zf_code zf_verify(const char* a, const char* b, zf_verify_report* report, zf_error* err) noexcept {
  return zf_verify_env(nullptr, a, b, report, err);
}
