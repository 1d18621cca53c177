// The merge --hf family table parser (src/hfexport/table.h): a table file
// as --hf-table reads it, then every rule's pattern matched against its own
// text and its targets substituted from what matched (against an empty
// config: every config reference is refused, never read out of bounds).
// fuzz-seeds: tables/hf/*.json
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "hfexport/table.h"
#include "json/value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  if (size > fuzz::kMaxRecordBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<hfexport::Table> table = hfexport::ParseTable(text, "fuzz.json");
  if (!table.ok()) return 0;
  const json::Value config = json::Value::Object({});
  for (const hfexport::Rule& rule : table->rules) {
    std::optional<hfexport::Bindings> bound = hfexport::MatchPattern(rule.from, rule.from);
    if (!bound) continue;
    for (const std::string& to : rule.to) hfexport::Substitute(to, *bound, config).status().IgnoreError();
  }
  return 0;
}
