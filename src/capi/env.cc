// zf_env: which side of a call goes to the caller's callbacks
// (callback_env.h).
#include <cstring>
#include <string>

#include "capi/callback_env.h"
#include "capi/error.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

// The callbacks each side needs, by name.
struct Needed {
  const char* name;
  bool (*set)(const zf_file_ops& ops);
};
constexpr Needed kInputNeeds[] = {
    {"stat", [](const zf_file_ops& o) { return o.stat != nullptr; }},
    {"open", [](const zf_file_ops& o) { return o.open != nullptr; }},
    {"read_at", [](const zf_file_ops& o) { return o.read_at != nullptr; }},
    {"close", [](const zf_file_ops& o) { return o.close != nullptr; }},
};
constexpr Needed kOutputNeeds[] = {
    {"stat", [](const zf_file_ops& o) { return o.stat != nullptr; }},
    {"create", [](const zf_file_ops& o) { return o.create != nullptr; }},
    {"write", [](const zf_file_ops& o) { return o.write != nullptr; }},
    {"commit", [](const zf_file_ops& o) { return o.commit != nullptr; }},
    {"abort", [](const zf_file_ops& o) { return o.abort != nullptr; }},
    {"remove", [](const zf_file_ops& o) { return o.remove != nullptr; }},
};

template <size_t N>
Status SetSide(std::optional<zf_env::Side>* side, const zf_file_ops* ops, size_t ops_size, void* user,
               const char* which, const Needed (&needs)[N]) {
  if (ops == nullptr) {
    side->reset();
    return Status::OK();
  }
  // Every size zf_file_ops has had: the struct only grows at its end.
  if (ops_size != sizeof(zf_file_ops))
    return Status::InvalidArgument("ops_size " + std::to_string(ops_size) + " is no size of zf_file_ops (" +
                                   std::to_string(sizeof(zf_file_ops)) + ")");
  zf_env::Side s;
  std::memcpy(&s.ops, ops, ops_size);
  s.user = user;
  for (const Needed& n : needs)
    if (!n.set(s.ops)) return Status::InvalidArgument(std::string(which) + " need the " + n.name + " callback");
  if (s.ops.open != nullptr && (s.ops.read_at == nullptr || s.ops.close == nullptr))
    return Status::InvalidArgument(std::string(which) + ": open needs read_at and close");
  *side = s;
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

extern "C" {

zf_env* zf_env_create(void) noexcept {
  try {
    return new zf_env();
  } catch (...) {
    return nullptr;
  }
}

void zf_env_destroy(zf_env* env) noexcept { delete env; }

zf_code zf_env_set_inputs(zf_env* env, const zf_file_ops* ops, size_t ops_size, void* user, zf_error* err) noexcept {
  return zerofold::capi::Guard(err, [&]() -> zerofold::Status {
    if (env == nullptr) return zerofold::Status::InvalidArgument("the env handle is NULL");
    return zerofold::capi::SetSide(&env->inputs, ops, ops_size, user, "inputs", zerofold::capi::kInputNeeds);
  });
}

zf_code zf_env_set_outputs(zf_env* env, const zf_file_ops* ops, size_t ops_size, void* user, zf_error* err) noexcept {
  return zerofold::capi::Guard(err, [&]() -> zerofold::Status {
    if (env == nullptr) return zerofold::Status::InvalidArgument("the env handle is NULL");
    return zerofold::capi::SetSide(&env->outputs, ops, ops_size, user, "outputs", zerofold::capi::kOutputNeeds);
  });
}

}  // extern "C"
