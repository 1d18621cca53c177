#include "capi/call_env.h"

namespace zerofold::capi {

namespace {

Env* Base(std::optional<CallbackEnv>& callbacks, const zf_env* env, const std::string& out) {
  if (env == nullptr) return Env::Default();
  callbacks.emplace(*env, Env::Default(), out);
  return &*callbacks;
}

}  // namespace

CallEnv::CallEnv(const zf_env* env, const std::string& out)
    : env_(env), cancel_(Base(callbacks_, env, out), &stop_, Why) {}

std::string CallEnv::Why(int) { return "stopped: the progress callback asked to stop"; }

void CallEnv::Progress(zf_progress_fn fn, void* user, const char* phase, uint64_t done, uint64_t total) {
  if (fn != nullptr && fn(user, phase, done, total) != 0) stop_ = 1;
}

Status CallEnv::Finish(Status s) const {
  if (s.ok() || s.code() == Code::kCancelled || stop_ == 0) return s;
  Status cancelled = Status::Cancelled(Why(stop_));
  if (!s.path().empty()) cancelled.WithPath(s.path());
  return cancelled;
}

}  // namespace zerofold::capi
