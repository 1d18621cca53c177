// WithoutMember: config.json's quantization_config cut out of the text, the
// rest byte for byte, wherever the member stands.
#include "rewrite/dequantize.h"

#include <doctest/doctest.h>

namespace zerofold::rewrite {
namespace {

TEST_CASE("WithoutMember: middle, last, first, only, absent") {
  CHECK(*WithoutMember("{\n  \"a\": 1,\n  \"q\": {\"x\": [1, 2]},\n  \"b\": 2\n}", "q") == "{\n  \"a\": 1,\n  \"b\": 2\n}");
  CHECK(*WithoutMember("{\n  \"a\": 1,\n  \"q\": {\"x\": \"}\"}\n}\n", "q") == "{\n  \"a\": 1\n}\n");
  CHECK(*WithoutMember("{\"q\": 1, \"a\": 2}", "q") == "{\"a\": 2}");
  CHECK(*WithoutMember(" { \"q\": {} } ", "q") == " { } ");
  CHECK(*WithoutMember("{\"a\": 2}", "q") == "{\"a\": 2}");
  CHECK(WithoutMember("[1]", "q").status().code() == Code::kCorrupt);
}

}  // namespace
}  // namespace zerofold::rewrite
