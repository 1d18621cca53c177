// The shrink and convert commands' report of a conversion (--to safetensors, or torch
// shards into a folder): lines for people and the --json document.
#ifndef ZEROFOLD_CLI_SHRINK_CONVERT_H_
#define ZEROFOLD_CLI_SHRINK_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/convert.h"
#include "rewrite/dequantize.h"
#include "io/read_plan.h"
#include "json/writer.h"
#include "output/parts.h"

namespace zerofold::cli {

// Prints r's warnings on stderr and, unless quiet, one line per file written
// (and the verification's totals) on stdout, or on stderr when standard
// output carries the data (to_stdout). With --part I/N: the lines of the
// part's files (those found complete say so) and PartSummary's line;
// finish: PartSummary's line and the index.
// --dequantize: "dequantized N weights (schemes) of quant_method M; kept K tensors as they are".
void PrintDequantizeSummary(const rewrite::DequantizeReport& r);

void PrintConvertReport(const rewrite::ConvertReport& r, const output::PartSpec& part, bool dry_run, bool quiet,
                        bool to_stdout);

// "verified_tensors": N, "verified_bytes": M (--verify's totals).
void WriteVerified(json::Writer& w, size_t tensors, uint64_t bytes);

// "reads": [{"path", "offset", "length"}], "read_bytes": N: a dry run's
// read plan (io/read_plan.h), in shrink's, convert's and merge's --json.
void WriteReadsJson(json::Writer& w, const io::ReadPlan& reads);

// The --json document of a conversion; `reads` (a dry run's) when not null.
// With --part, "parts" and "skipped" as merge has them (WritePartsJson).
// `dequantized` when not null: "dequantize": {"quant_method" (null when the
// names decided), "schemes", "weights", "kept"}.
std::string ConvertReportJson(const rewrite::ConvertReport& r, const output::PartSpec& part, bool dry_run,
                              const rewrite::DequantizeReport* dequantized,
                              const io::ReadPlan* reads);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_SHRINK_CONVERT_H_
