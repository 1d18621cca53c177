// `zerofold scan --json` and zf_scan_json: one compact JSON object per
// line, for pipelines (schema in README.md):
//   per file: {"type":"file", "path", "verdict", "format", "error" (null
//     or an error object, model/listing_json.h), "note", "unsafe_globals",
//     "file_bytes", "tensors", "stored_bytes", "referenced_bytes",
//     "shrink_saves_bytes" (null when shrink does not take the file),
//     "optimizer_bytes", "hashed"};
//   then once: {"type":"totals", "files", "verdicts" {NAME: count},
//     "file_bytes", "stored_bytes", "referenced_bytes",
//     "shrink_saves_bytes", "optimizer_bytes", "hashed",
//     "duplicates" [{"hash", "nbytes", "copies" [...], "wasted_bytes"}]
//     (empty without hash), "duplicate_wasted_bytes"}.
// Each line ends with "\n". Bad UTF-8 in names is written \xNN escaped.
#ifndef ZEROFOLD_SCAN_JSON_H_
#define ZEROFOLD_SCAN_JSON_H_

#include <string>

#include "scan/result.h"
#include "zerofold/result.h"

namespace zerofold::scan {

// The line of one file. An error only for a zerofold bug (writer misuse).
Result<std::string> FileJsonLine(const FileResult& r);
// The totals line.
Result<std::string> TotalsJsonLine(const Totals& t);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_JSON_H_
