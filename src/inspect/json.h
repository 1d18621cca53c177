// The `inspect --json` document of an inspect::Report: written by the CLI
// and by zf_inspect_json, byte for byte the same. Field names are part of
// the interface (README.md): append only.
#ifndef ZEROFOLD_INSPECT_JSON_H_
#define ZEROFOLD_INSPECT_JSON_H_

#include <string>

#include "inspect/inspect.h"
#include "zerofold/result.h"

namespace zerofold::inspect {

// {"files":[...]}: per PATH in order, its elements: each listed file
// (model/listing_json.h), the DCP folder (dcp::WriteListingJson), the
// Megatron checkpoint (megatron::WriteInspectionJson), the DeepSpeed
// checkpoint ({"path", "format":"deepspeed", "deepspeed":{...}}), or a
// failure ({"path", "error":{...}}, the PATH's or a file's); then
// "folders" (each Hugging Face folder's total) when there is one; a
// trailing newline. An error only for a zerofold bug (writer misuse).
Result<std::string> ReportJson(const Report& report);

}  // namespace zerofold::inspect

#endif  // ZEROFOLD_INSPECT_JSON_H_
