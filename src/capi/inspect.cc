// zf_inspect_json, and the calls that hand memory and constants out:
// zf_free, zf_version.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capi/call_env.h"
#include "capi/capi_version.h"
#include "capi/error.h"
#include "dcp/listing.h"
#include "model/hf_folder.h"
#include "model/listing.h"
#include "model/listing_json.h"
#include "shrink/shrink.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

// `zerofold inspect --json PATH` for one PATH (src/cli/inspect_command.cc):
// the same calls and the same document writer. Sets `doc` to the document
// and `first` to the first file's failure (OK when every file was listed).
// Returns kInternal, and no document, only when the writer fails (a
// zerofold bug).
Status InspectJson(Env* env, const std::string& path, std::string* doc, Status* first) {
  const model::ListOptions options;
  model::JsonFiles json_files;
  Result<std::optional<dcp::Listing>> dcp_listing = dcp::ListDcpPath(env, path, options.torch);
  Result<model::ModelFiles> files = model::ModelFiles{};
  if (!dcp_listing.ok()) {
    json_files.AddError(path, dcp_listing.status());
    *first = dcp_listing.status();
  } else if (*dcp_listing) {
    json_files.AddWith([&](json::Writer& w) { dcp::WriteListingJson(w, **dcp_listing); });
  } else if (files = model::ResolveModelPath(env, path, options); !files.ok()) {
    json_files.AddError(path, files.status());
    *first = files.status();
  } else {
    std::vector<model::Listing> listings;
    for (const std::string& file : files->files) {
      Result<model::Listing> listing = model::ListFile(env, file, options);
      if (listing.ok()) {
        json_files.Add(*listing);
        listings.push_back(std::move(listing).value());
        continue;
      }
      json_files.AddError(file, listing.status());
      if (first->ok()) *first = listing.status();
    }
    if (!files->folder.empty())
      json_files.AddFolder(shrink::TotalOfFolder(env, path, files->files, listings, first->ok(), options.torch));
  }
  Result<std::string> text = json_files.Finish();
  if (!text.ok()) return Status::Internal("inspect JSON document: " + text.status().message());
  *doc = std::move(*text);
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

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
    std::string doc;
    Status first;
    ZF_TRY(zerofold::capi::InspectJson(call.env(), path, &doc, &first));
    zerofold::capi::HandOut(doc, json, json_length);
    return first;
  });
}

zf_code zf_inspect_json(const char* path, char** json, size_t* json_length, zf_error* err) noexcept {
  return zf_inspect_json_env(nullptr, path, json, json_length, err);
}

}  // extern "C"
