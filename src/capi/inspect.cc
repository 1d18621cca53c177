// zf_inspect_json, and the calls that hand memory and constants out:
// zf_free, zf_version.
#include <cstdlib>
#include <string>

#include "capi/call_env.h"
#include "capi/capi_version.h"
#include "capi/error.h"
#include "inspect/inspect.h"
#include "inspect/json.h"
#include "model/listing.h"
#include "zerofold/zerofold.h"

extern "C" {

const char* zf_version(void) noexcept { return ZF_VERSION_STRING; }

void zf_free(void* p) noexcept { std::free(p); }

zf_code zf_inspect_json_env(const zf_env* env, const char* path, char** json, size_t* json_length,
                            zf_error* err) noexcept {
  using zerofold::Status;
  if (json != nullptr) *json = nullptr;
  if (json_length != nullptr) *json_length = 0;
  return zerofold::capi::Guard(err, [&]() -> Status {
    if (path == nullptr) return Status::InvalidArgument("PATH is NULL");
    if (json == nullptr) return Status::InvalidArgument("json is NULL; it receives the document");
    zerofold::capi::CallEnv call(env, "");
    // `zerofold inspect --json PATH`: the same report, the same document.
    const zerofold::inspect::Report report =
        zerofold::inspect::Inspect(call.env(), {path}, zerofold::model::ListOptions());
    zerofold::Result<std::string> doc = zerofold::inspect::ReportJson(report);
    if (!doc.ok()) return Status::Internal("inspect JSON document: " + doc.status().message());
    zerofold::capi::HandOut(*doc, json, json_length);
    return report.FirstError();
  });
}

zf_code zf_inspect_json(const char* path, char** json, size_t* json_length, zf_error* err) noexcept {
  return zf_inspect_json_env(nullptr, path, json, json_length, err);
}

}  // extern "C"
