// The Env one C API call runs on: the caller's zf_env (callback_env.h), or
// the operating system's files, read and written through a cancellation
// token (io/cancel_env.h) that the caller's progress callback sets by
// returning nonzero. One mechanism stops every call: the next read or
// write fails with kCancelled and the job unwinds as a failed one does.
#ifndef ZEROFOLD_CAPI_CALL_ENV_H_
#define ZEROFOLD_CAPI_CALL_ENV_H_

#include <optional>
#include <string>

#include "capi/callback_env.h"
#include "io/cancel_env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

class CallEnv {
 public:
  // `env` may be null (the operating system's files); `out` is the call's
  // OUT ("" when it writes nothing). `env` must outlive this object.
  CallEnv(const zf_env* env, const std::string& out);
  CallEnv(const CallEnv&) = delete;
  CallEnv& operator=(const CallEnv&) = delete;

  Env* env() { return &cancel_; }
  // True when the call hands its outputs to callbacks.
  bool callback_outputs() const { return callbacks_ && env_->outputs.has_value(); }
  bool callback_inputs() const { return callbacks_ && env_->inputs.has_value(); }

  // Reports progress to `fn` (may be null); a nonzero return stops the call.
  void Progress(zf_progress_fn fn, void* user, const char* phase, uint64_t done, uint64_t total);

  // What the call returns: `s`, or kCancelled (path kept) when it failed
  // after the progress callback asked it to stop. A call that completed
  // despite the request returns OK: its outputs are whole.
  Status Finish(Status s) const;

 private:
  static std::string Why(int);

  const zf_env* env_;
  std::optional<CallbackEnv> callbacks_;
  io::CancelFlag stop_{0};
  io::CancelEnv cancel_;
};

}  // namespace zerofold::capi

#endif  // ZEROFOLD_CAPI_CALL_ENV_H_
