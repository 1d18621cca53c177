// JSON reader (src/json/reader.h). A document that parses must write back
// (compact and indented) to text that parses to the same tree; every number
// converts without fault.
// fuzz-seeds: fixtures/hf/bloated/*.json fixtures/deepspeed/*/*.json fuzz/seeds/json_reader/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_input.h"
#include "json/reader.h"
#include "json/writer.h"

namespace zerofold::json {
namespace {

void ConvertNumbers(const Value& v) {
  if (v.is_number()) {
    (void)v.AsUint64();
    (void)v.AsInt64();
    (void)v.AsDouble();
    (void)v.IsInteger();
  }
  for (const Value& item : v.array()) ConvertNumbers(item);
  for (const Member& m : v.members()) ConvertNumbers(m.value);
}

void CheckRewrite(const Value& v, const WriteOptions& options) {
  Writer w(options);
  w.Write(v);
  Result<std::string> text = w.Finish();
  if (!text.ok()) abort();  // a parsed tree is always writable
  Result<Value> again = Parse(*text);
  if (!again.ok() || !(*again == v)) abort();
}

}  // namespace
}  // namespace zerofold::json

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<json::Value> v = json::Parse(fuzz::Bytes(data, size));
  if (!v.ok()) return 0;
  json::ConvertNumbers(*v);
  json::CheckRewrite(*v, {});
  json::CheckRewrite(*v, {.indent = 2});
  json::CheckRewrite(*v, {.indent = 1, .ascii_only = true});
  return 0;
}
