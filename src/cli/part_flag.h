// --part for the commands that write a folder of files (merge, shrink and
// convert of folders): parsing and reporting, one mechanism for all
// (output/parts.h does the division).
#ifndef ZEROFOLD_CLI_PART_FLAG_H_
#define ZEROFOLD_CLI_PART_FLAG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.h"
#include "json/writer.h"
#include "output/parts.h"
#include "zerofold/result.h"

namespace zerofold::cli {

// The flag's spec and help line.
FlagSpec PartFlagSpec();

// The --part of args (kAll when absent); kInvalidArgument with the reason.
Result<output::PartSpec> ApplyPartFlag(const ParsedArgs& args);

// Two keys of a command's --json document: "parts", for I/N each part's
// index, files and bytes (every part's: the plan is the same for all), for
// the other kinds null; "skipped", the files this part found complete and
// did not rewrite ([] otherwise).
void WritePartsJson(json::Writer& w, const output::PartSpec& part, const output::PartFiles& files);

// One line for the text summary: "part I/N: K of M files, BYTES (S already
// complete, skipped); run --part finish after every part", or "finish: M
// files complete" and ", index written" when `index`; "" without --part.
std::string PartSummary(const output::PartSpec& part, const output::PartFiles& files, bool index);

// True when file k of `files` belongs to this run's part (I/N); false for
// the other kinds.
bool InThisPart(const output::PartSpec& part, const output::PartFiles& files, size_t k);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_PART_FLAG_H_
