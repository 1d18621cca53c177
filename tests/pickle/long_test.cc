#include "pickle/long.h"

#include <doctest/doctest.h>

#include <string>

#include "pickle/text_args.h"

namespace zerofold::pickle {
namespace {

using namespace std::string_literals;

TEST_CASE("long payloads convert to int64 when they fit") {
  CHECK_EQ(LongToInt64(""), 0);
  CHECK_EQ(LongToInt64("\xff"), -1);
  CHECK_EQ(LongToInt64("\x80"), -128);
  CHECK_EQ(LongToInt64("\x80\x00"s), 128);
  CHECK_EQ(LongToInt64("\xff\xff\xff\xff\xff\xff\xff\xff\xff"), -1);
  CHECK_EQ(LongToInt64("\x00\x00\x00\x00\x00\x00\x00\x80"s), INT64_MIN);
  CHECK_EQ(LongToInt64("\xff\xff\xff\xff\xff\xff\xff\x7f\x00"s), INT64_MAX);
  CHECK_FALSE(LongToInt64("\x00\x00\x00\x00\x00\x00\x00\x80\x00"s).has_value());  // 2^63
  CHECK_FALSE(LongToInt64("\xff\xff\xff\xff\xff\xff\xff\x7f\xff"s).has_value());  // -2^63 - 1
}

TEST_CASE("Int64ToLong writes the shortest payload, as CPython") {
  CHECK_EQ(Int64ToLong(0), "");
  CHECK_EQ(Int64ToLong(127), "\x7f");
  CHECK_EQ(Int64ToLong(128), "\x80\x00"s);
  CHECK_EQ(Int64ToLong(255), "\xff\x00"s);
  CHECK_EQ(Int64ToLong(-1), "\xff");
  CHECK_EQ(Int64ToLong(-128), "\x80");
  CHECK_EQ(Int64ToLong(-129), "\x7f\xff");
  CHECK_EQ(Int64ToLong(INT64_MIN), "\x00\x00\x00\x00\x00\x00\x00\x80"s);
  CHECK_EQ(TrimLong("\x05\x00\x00"s), "\x05");
  CHECK_EQ(TrimLong("\xfe\xff\xff"), "\xfe");
  CHECK_EQ(TrimLong("\x00\x00"s), "");
}

TEST_CASE("decimal text converts both ways") {
  std::string le;
  REQUIRE(DecimalToLong("18446744073709551616", &le));
  CHECK_EQ(le, "\x00\x00\x00\x00\x00\x00\x00\x00\x01"s);
  REQUIRE(DecimalToLong("-18446744073709551616", &le));
  CHECK_EQ(le, "\x00\x00\x00\x00\x00\x00\x00\x00\xff"s);
  REQUIRE(DecimalToLong("+0", &le));
  CHECK_EQ(le, "");
  CHECK_FALSE(DecimalToLong("12a", &le));
  CHECK_FALSE(DecimalToLong("-", &le));
  CHECK_FALSE(DecimalToLong("", &le));
  const char* numbers[] = {"0", "1", "-1", "255", "-256", "9223372036854775807", "-9223372036854775808",
                           "1180591620717411303424", "-1000000000000000000000000000000000000000000001"};
  for (const char* n : numbers) {
    CAPTURE(n);
    REQUIRE(DecimalToLong(n, &le));
    CHECK_EQ(LongToDecimal(le), n);
  }
}

TEST_CASE("protocol 0 text arguments") {
  int64_t v = 0;
  bool fits = false;
  CHECK(ParseDecimal("-42", &v, &fits));
  CHECK(fits);
  CHECK_EQ(v, -42);
  CHECK(ParseDecimal("99999999999999999999", &v, &fits));
  CHECK_FALSE(fits);
  CHECK_FALSE(ParseDecimal("4 2", &v, &fits));
  CHECK_FALSE(ParseDecimal("0x10", &v, &fits));
  CHECK_EQ(ParseFloat("1e-08"), 1e-08);
  CHECK_EQ(ParseFloat("+2.5"), 2.5);
  CHECK_FALSE(ParseFloat("1.5x").has_value());
  CHECK_FALSE(ParseFloat("").has_value());

  std::string out, why;
  CHECK(DecodeStringEscape("\\0\\08\\777\\x41\\\n!", &out, &why));
  CHECK_EQ(out, "\x00\x00" "8\xff" "A!"s);
  CHECK_FALSE(DecodeStringEscape("\\x4g", &out, &why));
  CHECK_EQ(why, "invalid \\x escape at byte 0");

  CHECK(DecodeRawUnicodeEscape("a\\u00e9\\\\u0041\xff", &out, &why));
  CHECK_EQ(out, "a\xc3\xa9\\\\u0041\xc3\xbf");
  CHECK_FALSE(DecodeRawUnicodeEscape("\\U0011ffff", &out, &why));
  CHECK_EQ(why, "\\U escape past U+10FFFF at byte 0");
}

TEST_CASE("UTF-8 check accepts what Python's surrogatepass decoding accepts") {
  size_t bad = 0;
  CHECK(IsUtf8("plain ascii, long enough for the fast path", &bad));
  CHECK(IsUtf8("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", &bad));
  CHECK(IsUtf8("\xed\xa0\x80", &bad));  // a lone surrogate
  const char* invalid[] = {"\x80", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xf0\x80\x80\x80",
                           "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xc3", "abcdefgh\xe6\x97"};
  for (const char* s : invalid) {
    CAPTURE(s);
    CHECK_FALSE(IsUtf8(s, &bad));
  }
  CHECK_FALSE(IsUtf8("abcdefgh\xe6\x97", &bad));
  CHECK_EQ(bad, 8u);
}

}  // namespace
}  // namespace zerofold::pickle
