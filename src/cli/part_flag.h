// --part for the commands that write a folder of files (merge, shrink and
// convert of folders): parsing and reporting, one mechanism for all
// (ops/parts.h does the division).
#ifndef ZEROFOLD_CLI_PART_FLAG_H_
#define ZEROFOLD_CLI_PART_FLAG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.h"
#include "json/writer.h"
#include "ops/parts.h"
#include "zerofold/result.h"

namespace zerofold::cli {

// The flag's spec and help line.
FlagSpec PartFlagSpec();

// The --part of args (kAll when absent); kInvalidArgument with the reason.
Result<ops::PartSpec> ApplyPartFlag(const ParsedArgs& args);

// Under key "parts": for I/N, each part's index, files and bytes; for the
// other kinds, null. `paths` and `bytes` are the output files in plan order
// and `file_parts` their parts.
void WritePartsJson(json::Writer& w, const ops::PartSpec& part, const std::vector<std::string>& paths,
                    const std::vector<uint64_t>& bytes, const std::vector<uint32_t>& file_parts);

// One line for the text summary: "part I/N: K of M files, BYTES", or
// "finish: M files complete"; "" without --part.
std::string PartSummary(const ops::PartSpec& part, const std::vector<uint64_t>& bytes,
                        const std::vector<uint32_t>& file_parts, size_t skipped);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_PART_FLAG_H_
