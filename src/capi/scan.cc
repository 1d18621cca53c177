// zf_scan_json: `zerofold scan --json` through the same library call
// (scan/scan.h), its lines handed to the caller as they are made.
#include <string>
#include <vector>

#include "capi/call_env.h"
#include "capi/error.h"
#include "capi/options.h"
#include "scan/json.h"
#include "scan/scan.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

Status Deliver(const std::string& line, zf_line_fn on_line, void* user) {
  if (on_line(user, line.c_str(), line.size()) != 0) return Status::Cancelled("the line callback stopped the scan");
  return Status::OK();
}

Status ScanJson(const char* const* paths, size_t count, const zf_scan_options& o, zf_line_fn on_line, void* user) {
  if (paths == nullptr && count > 0) return Status::InvalidArgument("paths is NULL");
  if (on_line == nullptr) return Status::InvalidArgument("on_line is NULL; it receives the lines");
  std::vector<std::string> list;
  for (size_t i = 0; i < count; ++i) {
    if (paths[i] == nullptr) return Status::InvalidArgument("paths[" + std::to_string(i) + "] is NULL");
    list.emplace_back(paths[i]);
  }
  if (list.empty()) return Status::InvalidArgument("needs at least one path");
  scan::ScanOptions options = o.scan;
  CallEnv call(o.env, "");
  if (o.progress != nullptr)
    options.progress = [&](const std::string&, uint64_t done, uint64_t total) {
      call.Progress(o.progress, o.progress_user, "scan", done, total);
    };
  Status first;
  Result<scan::Totals> totals = scan::Scan(call.env(), list, options, [&](const scan::FileResult& r) -> Status {
    if (first.ok()) first = scan::ResultStatus(r);
    ZF_ASSIGN_OR_RETURN(std::string line, scan::FileJsonLine(r));
    return Deliver(line, on_line, user);
  });
  if (!totals.ok()) return call.Finish(totals.status());
  ZF_ASSIGN_OR_RETURN(std::string line, scan::TotalsJsonLine(*totals));
  ZF_TRY(Deliver(line, on_line, user));
  return call.Finish(first);
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_scan_json(const char* const* paths, size_t count, const zf_scan_options* options,
                                zf_line_fn on_line, void* user, zf_error* err) noexcept {
  const zf_scan_options defaults;
  return zerofold::capi::Guard(err, [&] {
    return zerofold::capi::ScanJson(paths, count, options != nullptr ? *options : defaults, on_line, user);
  });
}
