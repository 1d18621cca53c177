#include "json/reader.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::json {
namespace {

TEST_CASE("json reader parses every kind of value with offsets") {
  Result<Value> r = Parse(R"( {"a": [1, -2.5e3, true, false, null], "b": "x\u00e9\n", "c": {}} )",
                          {}, 1000);
  REQUIRE(r.ok());
  const Value& v = *r;
  CHECK(v.is_object());
  CHECK_EQ(v.offset(), 1001u);
  REQUIRE_EQ(v.members().size(), 3u);
  CHECK_EQ(v.members()[0].key, "a");
  CHECK_EQ(v.members()[0].key_offset, 1002u);
  const Value& a = v.members()[0].value;
  REQUIRE(a.is_array());
  CHECK_EQ(a.offset(), 1007u);
  REQUIRE_EQ(a.array().size(), 5u);
  CHECK_EQ(a.array()[0].number_text(), "1");
  CHECK_EQ(a.array()[0].offset(), 1008u);
  CHECK_EQ(a.array()[1].number_text(), "-2.5e3");
  CHECK_EQ(a.array()[1].AsDouble().value(), -2500.0);
  CHECK_FALSE(a.array()[1].AsInt64().has_value());
  CHECK(a.array()[2].boolean());
  CHECK(a.array()[3].is_bool());
  CHECK_FALSE(a.array()[3].boolean());
  CHECK(a.array()[4].is_null());
  CHECK_EQ(v.Find("b")->string(), "x\xc3\xa9\n");
  CHECK(v.Find("c")->is_object());
  CHECK(v.Find("c")->members().empty());
  CHECK_EQ(v.Find("zz"), nullptr);
}

TEST_CASE("json scalar documents and whitespace") {
  CHECK_EQ(Parse("0")->number_text(), "0");
  CHECK_EQ(Parse(" \t\r\n\"s\" \n")->string(), "s");
  CHECK(Parse("null")->is_null());
  CHECK(Parse("[]")->array().empty());
  CHECK(Parse("[[[]]]").ok());
}

TEST_CASE("json numbers convert exactly or not at all") {
  struct Case {
    const char* text;
    std::optional<uint64_t> u64;
    std::optional<int64_t> i64;
    bool integer;
  };
  const Case kCases[] = {
      {"0", 0, 0, true},
      {"-0", std::nullopt, 0, true},
      {"18446744073709551615", UINT64_MAX, std::nullopt, true},
      {"18446744073709551616", std::nullopt, std::nullopt, true},
      {"9223372036854775807", INT64_MAX, INT64_MAX, true},
      {"-9223372036854775808", std::nullopt, INT64_MIN, true},
      {"-9223372036854775809", std::nullopt, std::nullopt, true},
      {"1.0", std::nullopt, std::nullopt, false},
      {"1e2", std::nullopt, std::nullopt, false},
      {"12", 12, 12, true},
  };
  for (const Case& c : kCases) {
    INFO(c.text);
    Result<Value> v = Parse(c.text);
    REQUIRE(v.ok());
    CHECK_EQ(v->AsUint64(), c.u64);
    CHECK_EQ(v->AsInt64(), c.i64);
    CHECK_EQ(v->IsInteger(), c.integer);
  }
  CHECK_EQ(Parse("0.1")->AsDouble().value(), 0.1);
  CHECK_EQ(Parse("1e308")->AsDouble().value(), 1e308);
  CHECK_FALSE(Parse("1e309")->AsDouble().has_value());
  CHECK_EQ(Parse("18446744073709551616")->AsDouble().value(), 18446744073709551616.0);
  CHECK_FALSE(Parse("\"1\"")->AsUint64().has_value());
}

TEST_CASE("json string escapes decode to UTF-8") {
  CHECK_EQ(Parse(R"("\"\\\/\b\f\n\r\t")")->string(), "\"\\/\b\f\n\r\t");
  CHECK_EQ(Parse(R"("\u0000")")->string(), std::string(1, '\0'));
  CHECK_EQ(Parse(R"("\u00E9\u20ac")")->string(), "\xc3\xa9\xe2\x82\xac");
  CHECK_EQ(Parse(R"("\ud83d\ude00")")->string(), "\xf0\x9f\x98\x80");
  CHECK_EQ(Parse("\"\xf0\x9f\x98\x80\"")->string(), "\xf0\x9f\x98\x80");
}

struct BadCase {
  const char* name;
  std::string text;
  Code code;
  uint64_t offset;  // relative to the text; the test adds a base of 100
};

TEST_CASE("json reader rejects malformed text at the exact offset") {
  const BadCase kBad[] = {
      {"empty", "", Code::kCorrupt, 0},
      {"only spaces", "   ", Code::kCorrupt, 3},
      {"bom", "\xef\xbb\xbf{}", Code::kCorrupt, 0},
      {"trailing comma array", "[1,]", Code::kCorrupt, 3},
      {"trailing comma object", "{\"a\":1,}", Code::kCorrupt, 7},
      {"missing colon", "{\"a\" 1}", Code::kCorrupt, 5},
      {"missing comma", "[1 2]", Code::kCorrupt, 3},
      {"unclosed array", "[1", Code::kCorrupt, 2},
      {"unclosed object", "{\"a\":1", Code::kCorrupt, 6},
      {"non-string key", "{1:2}", Code::kCorrupt, 1},
      {"single quotes", "'a'", Code::kCorrupt, 0},
      {"trailing garbage", "{} x", Code::kCorrupt, 3},
      {"two values", "1 2", Code::kCorrupt, 2},
      {"leading zero", "01", Code::kCorrupt, 0},
      {"negative leading zero", "-01", Code::kCorrupt, 0},
      {"plus sign", "+1", Code::kCorrupt, 0},
      {"bare minus", "-", Code::kCorrupt, 1},
      {"dot without digits", "1.", Code::kCorrupt, 2},
      {"leading dot", ".5", Code::kCorrupt, 0},
      {"exponent without digits", "1e+", Code::kCorrupt, 3},
      {"NaN", "NaN", Code::kCorrupt, 0},
      {"Infinity", "-Infinity", Code::kCorrupt, 1},
      {"bad literal", "tru", Code::kCorrupt, 0},
      {"capital literal", "True", Code::kCorrupt, 0},
      {"unterminated string", "\"abc", Code::kCorrupt, 0},
      {"unterminated escape", "\"\\", Code::kCorrupt, 0},
      {"bad escape", "\"a\\x\"", Code::kCorrupt, 2},
      {"short unicode escape", "\"\\u12\"", Code::kCorrupt, 1},
      {"bad hex", "\"\\u12g4\"", Code::kCorrupt, 1},
      {"lone high surrogate", "\"\\ud800\"", Code::kCorrupt, 1},
      {"high then non-low", "\"\\ud800\\u0041\"", Code::kCorrupt, 1},
      {"lone low surrogate", "\"ab\\udc00\"", Code::kCorrupt, 3},
      {"raw control char", "\"a\tb\"", Code::kCorrupt, 2},
      {"raw newline", "\"a\nb\"", Code::kCorrupt, 2},
      {"invalid utf8", "\"a\xff\"", Code::kCorrupt, 2},
      {"overlong utf8", "\"\xc0\xaf\"", Code::kCorrupt, 1},
      {"utf8 surrogate", "\"\xed\xa0\x80\"", Code::kCorrupt, 1},
      {"truncated utf8", "\"\xe2\x82\"", Code::kCorrupt, 1},
      {"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", Code::kCorrupt, 1},
      {"form feed whitespace", "\f1", Code::kCorrupt, 0},
      {"comment", "/*x*/1", Code::kCorrupt, 0},
      {"duplicate key", "{\"a\":1,\"b\":2,\"a\":3}", Code::kCorrupt, 13},
      {"duplicate after unescape", "{\"a\":1,\"\\u0061\":2}", Code::kCorrupt, 7},
      {"nested duplicate", "[{\"k\":{},\"k\":[]}]", Code::kCorrupt, 9},
      {"mismatched bracket", "[1}", Code::kCorrupt, 2},
      {"nul byte", std::string("[1\0]", 4), Code::kCorrupt, 2},
  };
  for (const BadCase& c : kBad) {
    INFO(c.name);
    Result<Value> r = Parse(c.text, {}, 100);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), c.code);
    CHECK_EQ(r.status().offset(), 100 + c.offset);
  }
}

TEST_CASE("json duplicate keys may be kept on request, in order") {
  ParseOptions opts;
  opts.allow_duplicate_keys = true;
  Result<Value> r = Parse("{\"a\":1,\"a\":2}", opts);
  REQUIRE(r.ok());
  REQUIRE_EQ(r->members().size(), 2u);
  CHECK_EQ(r->members()[0].value.number_text(), "1");
  CHECK_EQ(r->members()[1].value.number_text(), "2");
  CHECK_EQ(r->Find("a")->number_text(), "1");
}

TEST_CASE("json error messages say what and where") {
  Status s = Parse("{\"a\":1,\"b\":2,\"a\":3}").status();
  CHECK_EQ(s.message(), "JSON: duplicate key \"a\" (first at offset 1)");
  s = Parse("[1 2]").status();
  CHECK_EQ(s.message(), "JSON: unexpected '2', expected ',' or ']'");
  s = Parse("[1").status();
  CHECK_EQ(s.message(), "JSON: unexpected end of input, expected ',' or ']'");
  s = Parse("\"a\tb\"").status();
  CHECK_EQ(s.message(), "JSON: unescaped control character byte 0x09 in string");
  ParseOptions opts;
  opts.max_depth = 2;
  s = Parse("[[[]]]", opts).status();
  CHECK_EQ(s.message(), "JSON: nesting deeper than 2 (ParseOptions::max_depth)");
}

TEST_CASE("json limits: depth, size, value count") {
  ParseOptions opts;
  opts.max_depth = 3;
  CHECK(Parse("[[[1]]]", opts).ok());
  Result<Value> r = Parse("[[[[1]]]]", opts, 50);
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().offset(), 53u);
  CHECK(Parse("{\"a\":{\"b\":{\"c\":1}}}", opts).ok());
  CHECK_EQ(Parse("{\"a\":{\"b\":{\"c\":{}}}}", opts).status().code(), Code::kLimit);
  opts.depth_is_format_rule = true;
  r = Parse("[[[[1]]]]", opts, 50);
  CHECK_EQ(r.status().code(), Code::kCorrupt);
  CHECK_EQ(r.status().offset(), 53u);
  CHECK_EQ(r.status().message(), "JSON: nesting deeper than 3");

  opts = ParseOptions();
  opts.max_bytes = 4;
  CHECK(Parse("[12]", opts).ok());
  r = Parse("[123]", opts, 7);
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().offset(), 7u);

  opts = ParseOptions();
  opts.max_values = 3;
  CHECK(Parse("[1,2]", opts).ok());
  r = Parse("[1,2,3]", opts);
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().offset(), 5u);
}

TEST_CASE("json nesting a million deep fails fast without recursion") {
  std::string deep(1'000'000, '[');
  Result<Value> r = Parse(deep);
  CHECK_EQ(r.status().code(), Code::kLimit);
  CHECK_EQ(r.status().offset(), 128u);
  // With the limit raised, the iterative parser still copes.
  ParseOptions opts;
  opts.max_depth = 2'000'000;
  std::string balanced = deep + std::string(1'000'000, ']');
  Result<Value> ok = Parse(balanced, opts);
  REQUIRE(ok.ok());
  CHECK(ok->is_array());
}

TEST_CASE("json every strict prefix of a document fails") {
  const std::string doc = R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"s":"\u00e9x"})";
  REQUIRE(Parse(doc).ok());
  for (size_t n = 0; n < doc.size(); ++n) {
    CAPTURE(n);
    Result<Value> r = Parse(std::string_view(doc.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), Code::kCorrupt);
    CHECK_LE(r.status().offset(), n);
  }
}

}  // namespace
}  // namespace zerofold::json
