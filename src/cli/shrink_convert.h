// The shrink command's report of a conversion (--to safetensors, or torch
// shards into a folder): lines for people and the --json document.
#ifndef ZEROFOLD_CLI_SHRINK_CONVERT_H_
#define ZEROFOLD_CLI_SHRINK_CONVERT_H_

#include <string>

#include "ops/convert.h"

namespace zerofold::cli {

// Prints r's warnings on stderr and, unless quiet, one line per file written
// on stdout.
void PrintConvertReport(const ops::ConvertReport& r, bool dry_run, bool quiet);

// The --json document of a conversion.
std::string ConvertReportJson(const ops::ConvertReport& r, bool dry_run);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_SHRINK_CONVERT_H_
