// The `diff --json` document, written by the CLI and by zf_diff. Field
// names are part of the interface (README.md): append only.
//   {"same", "mode": "exact"|"close", ["atol", "rtol", "equal_nan",]
//    "files_a", "files_b", "only_in_a", "only_in_b", "different",
//    "tensors": [{"name", "same", "dtype": [A, B], "shape": [[..], [..]],
//                 "values_compared", "xxh3_128": [A, B] | null,
//                 ["numel", "differing", "first_index": [..] | null,
//                  ["max_abs_diff", "max_rel_diff"]]}]}
#ifndef ZEROFOLD_DIFF_JSON_H_
#define ZEROFOLD_DIFF_JSON_H_

#include <string>

#include "diff/diff.h"
#include "zerofold/result.h"

namespace zerofold::diff {

// The document, with a trailing newline; an error only for a zerofold bug
// (writer misuse).
Result<std::string> DiffReportJson(const DiffReport& report, const DiffOptions& options);

}  // namespace zerofold::diff

#endif  // ZEROFOLD_DIFF_JSON_H_
