#include "json/writer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "json/reader.h"

namespace zerofold::json {
namespace {

std::string Quoted(std::string_view s, bool ascii_only = false) {
  std::string out;
  WriteOptions opts;
  opts.ascii_only = ascii_only;
  Status st = AppendString(s, opts, &out);
  REQUIRE(st.ok());
  return out;
}

TEST_CASE("json string escaping matches serde_json and Python") {
  CHECK_EQ(Quoted(""), "\"\"");
  CHECK_EQ(Quoted("a/b"), "\"a/b\"");
  CHECK_EQ(Quoted("\"\\"), "\"\\\"\\\\\"");
  CHECK_EQ(Quoted("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  CHECK_EQ(Quoted(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  CHECK_EQ(Quoted("\xc3\xa9\xe2\x82\xac"), "\"\xc3\xa9\xe2\x82\xac\"");
  // ensure_ascii: DEL and everything above as \uxxxx, lowercase, pairs above U+FFFF.
  CHECK_EQ(Quoted("\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", true),
           "\"\\u007f\\u00e9\\u20ac\\ud83d\\ude00\"");
  CHECK_EQ(Quoted("plain ascii", true), "\"plain ascii\"");
}

TEST_CASE("json writer refuses invalid UTF-8 and leaves the output alone") {
  std::string out = "x";
  Status s = AppendString("a\xff", {}, &out);
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "JSON output: string is not valid UTF-8 at byte 1: \"a\\xff\"");
  CHECK_EQ(out, "x");
}

TEST_CASE("json writer with escape_invalid_utf8 writes bad bytes as \\xNN text, the rest exactly") {
  WriteOptions o;
  o.escape_invalid_utf8 = true;
  struct Case {
    const char* name;
    std::string in, want;
  } cases[] = {
      {"valid stays exact", "a\\\xc3\xa9\n", "\"a\\\\\xc3\xa9\\n\""},
      {"one bad byte", "a\xff", "\"a\\\\xff\""},
      {"bad first, then valid", "\x80\xc3\xa9z", "\"\\\\x80\xc3\xa9z\""},
      {"truncated sequence, then control", std::string("\xe2\x82\0", 3), "\"\\\\xe2\\\\x82\\u0000\""},
      {"surrogate", "\xed\xa0\x80", "\"\\\\xed\\\\xa0\\\\x80\""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string out;
    REQUIRE(AppendString(c.in, o, &out).ok());
    CHECK_EQ(out, c.want);
  }
  o.ascii_only = true;
  std::string out;
  REQUIRE(AppendString("\xc3\xa9\xff", o, &out).ok());
  CHECK_EQ(out, "\"\\u00e9\\\\xff\"");
  // In a document: a key and a value, and Finish succeeds.
  Writer w(o);
  w.BeginObject();
  w.Key("k\xfe");
  w.String("v\xc0");
  w.EndObject();
  Result<std::string> doc = w.Finish();
  REQUIRE(doc.ok());
  CHECK_EQ(*doc, "{\"k\\\\xfe\":\"v\\\\xc0\"}");
}

TEST_CASE("QuoteForDisplay never fails and cuts long input") {
  CHECK_EQ(QuoteForDisplay("a\xff\n"), "\"a\\xff\\n\"");
  CHECK_EQ(QuoteForDisplay("abcdef", 3), "\"abc\"...");
}

TEST_CASE("json writer compact layout is serde_json's") {
  Writer w;
  w.BeginObject();
  w.Key("__metadata__");
  w.BeginObject();
  w.Key("format");
  w.String("pt");
  w.EndObject();
  w.Key("t");
  w.BeginObject();
  w.Key("dtype");
  w.String("F32");
  w.Key("shape");
  w.BeginArray();
  w.Uint(2);
  w.Uint(3);
  w.EndArray();
  w.Key("data_offsets");
  w.BeginArray();
  w.Uint(0);
  w.Uint(24);
  w.EndArray();
  w.Key("e");
  w.BeginArray();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  Result<std::string> r = w.Finish();
  REQUIRE(r.ok());
  CHECK_EQ(*r,
           R"({"__metadata__":{"format":"pt"},"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24],"e":[]}})");
}

TEST_CASE("json writer indented layout is Python's json.dumps(indent=2)") {
  WriteOptions opts;
  opts.indent = 2;
  Writer w(opts);
  w.BeginObject();
  w.Key("metadata");
  w.BeginObject();
  w.Key("total_size");
  w.Uint(48);
  w.EndObject();
  w.Key("weight_map");
  w.BeginObject();
  w.Key("a");
  w.String("m-1.safetensors");
  w.Key("b");
  w.BeginArray();
  w.Int(-1);
  w.Bool(true);
  w.Null();
  w.Double(2);
  w.BeginObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  Result<std::string> r = w.Finish();
  REQUIRE(r.ok());
  // json.dumps({"metadata": {"total_size": 48}, "weight_map": {"a": "m-1.safetensors",
  //             "b": [-1, True, None, 2.0, {}]}}, indent=2)
  CHECK_EQ(*r,
           "{\n"
           "  \"metadata\": {\n"
           "    \"total_size\": 48\n"
           "  },\n"
           "  \"weight_map\": {\n"
           "    \"a\": \"m-1.safetensors\",\n"
           "    \"b\": [\n"
           "      -1,\n"
           "      true,\n"
           "      null,\n"
           "      2.0,\n"
           "      {}\n"
           "    ]\n"
           "  }\n"
           "}");
}

TEST_CASE("json writer doubles are shortest round-trip text") {
  auto one = [](double d) {
    Writer w;
    w.Double(d);
    return w.Finish().value();
  };
  CHECK_EQ(one(0.1), "0.1");
  CHECK_EQ(one(-2.0), "-2.0");
  CHECK_EQ(one(1e300), "1e+300");
  CHECK_EQ(one(0.0), "0.0");
  Writer w;
  w.Double(std::numeric_limits<double>::infinity());
  CHECK_EQ(w.Finish().status().code(), Code::kInvalidArgument);
}

TEST_CASE("json writer reports misuse at Finish") {
  {
    Writer w;
    w.BeginObject();
    w.Uint(1);  // a value where a key is due
    w.EndObject();
    CHECK_EQ(w.Finish().status().message(), "JSON output: a value where an object key is due");
  }
  {
    Writer w;
    w.BeginArray();
    CHECK_EQ(w.Finish().status().message(), "JSON output: unclosed array or object");
  }
  {
    Writer w;
    CHECK_EQ(w.Finish().status().message(), "JSON output: no value was written");
  }
  {
    Writer w;
    w.Uint(1);
    w.Uint(2);
    CHECK_EQ(w.Finish().status().message(), "JSON output: a second top-level value");
  }
  {
    Writer w;
    w.BeginArray();
    w.EndObject();
    CHECK_EQ(w.Finish().status().message(), "JSON output: EndObject outside an object");
  }
  {
    Writer w;
    w.BeginObject();
    w.Key("a");
    w.EndObject();
    CHECK_EQ(w.Finish().status().message(), "JSON output: EndObject after a key without a value");
  }
  {
    Writer w;
    w.BeginArray();
    w.Key("a");
    CHECK_EQ(w.Finish().status().code(), Code::kInvalidArgument);
  }
  {
    Writer w;
    w.BeginArray();
    w.String("\xc0\x80");
    w.EndArray();
    CHECK_EQ(w.Finish().status().code(), Code::kInvalidArgument);
  }
}

TEST_CASE("json parse then write round-trips byte for byte (compact input)") {
  const std::string docs[] = {
      R"({"a":[1,-2.5e3,true,false,null],"b":"x\u0001\n\"","c":{},"d":[]})",
      R"([{"k":"\u00e9"},0,-0,1E+2])",
      R"("just a string")",
  };
  const std::string expected[] = {
      R"({"a":[1,-2.5e3,true,false,null],"b":"x\u0001\n\"","c":{},"d":[]})",
      "[{\"k\":\"\xc3\xa9\"},0,-0,1E+2]",
      R"("just a string")",
  };
  for (size_t i = 0; i < 3; ++i) {
    Result<Value> v = Parse(docs[i]);
    REQUIRE(v.ok());
    Writer w;
    w.Write(*v);
    Result<std::string> out = w.Finish();
    REQUIRE(out.ok());
    CHECK_EQ(*out, expected[i]);
    CHECK(Parse(*out).value() == *v);
  }
}

TEST_CASE("json writer Strings: an array of strings, empty or not") {
  Writer w;
  w.BeginObject();
  w.Key("a");
  w.Strings(std::vector<std::string>{"x", "y\""});
  w.Key("b");
  w.Strings({});
  w.EndObject();
  Result<std::string> r = w.Finish();
  REQUIRE(r.ok());
  CHECK_EQ(*r, "{\"a\":[\"x\",\"y\\\"\"],\"b\":[]}");
}

}  // namespace
}  // namespace zerofold::json
