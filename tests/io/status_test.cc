#include "zerofold/status.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace zerofold {
namespace {

using namespace std::string_literals;

struct EscapeCase {
  const char* name;
  std::string text;
  std::string escaped;       // Backslash::kEscape
  std::string escaped_keep;  // Backslash::kKeep
};

const EscapeCase kEscapeCases[] = {
    {"empty", "", "", ""},
    {"printable ASCII", "model/data/0 a~!", "model/data/0 a~!", "model/data/0 a~!"},
    {"backslash", "a\\b", "a\\\\b", "a\\b"},
    {"an escape's text", "\\x0a", "\\\\x0a", "\\x0a"},
    {"newline, return, tab", "a\nb\rc\td", "a\\nb\\rc\\td", "a\\nb\\rc\\td"},
    {"NUL inside", "a\0b"s, "a\\x00b", "a\\x00b"},
    {"NUL at the end", "ab\0"s, "ab\\x00", "ab\\x00"},
    {"other C0 controls", "\x01\x1b[31m\x1f", "\\x01\\x1b[31m\\x1f", "\\x01\\x1b[31m\\x1f"},
    {"DEL", "a\x7f", "a\\x7f", "a\\x7f"},
    {"valid 2, 3 and 4 byte UTF-8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
     "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
    {"C1 controls U+0080, U+009B, U+009F", "\xc2\x80\xc2\x9b\xc2\x9f", "\\xc2\\x80\\xc2\\x9b\\xc2\\x9f",
     "\\xc2\\x80\\xc2\\x9b\\xc2\\x9f"},
    {"U+00A0 is no control", "\xc2\xa0", "\xc2\xa0", "\xc2\xa0"},
    {"lone continuation byte", "a\x80z", "a\\x80z", "a\\x80z"},
    {"0xff", "\xff", "\\xff", "\\xff"},
    {"truncated 3-byte sequence", "\xe2\x82", "\\xe2\\x82", "\\xe2\\x82"},
    {"truncated sequence before ASCII", "\xe2\x82z", "\\xe2\\x82z", "\\xe2\\x82z"},
    {"overlong NUL", "\xc0\x80", "\\xc0\\x80", "\\xc0\\x80"},
    {"surrogate U+D800", "\xed\xa0\x80", "\\xed\\xa0\\x80", "\\xed\\xa0\\x80"},
    {"past U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "\\xf4\\x90\\x80\\x80"},
};

TEST_CASE("EscapeForDisplay: one printable line of valid UTF-8, bytes named exactly") {
  for (const EscapeCase& c : kEscapeCases) {
    CAPTURE(c.name);
    CHECK_EQ(EscapeForDisplay(c.text, Backslash::kEscape), c.escaped);
    CHECK_EQ(EscapeForDisplay(c.text, Backslash::kKeep), c.escaped_keep);
  }
}

TEST_CASE("Status::ToString escapes path and record fully, the message but its backslashes") {
  Status s = Status::Corrupt("global 'os\nsystem' \"x\\ny\"\x1b").WithOffset(12);
  s.WithRecord("arch\x1b]0;\x07/da\xfft\\a\0.pkl"s).WithPath("dir\\/in\n.pt");
  CHECK_EQ(s.ToString(),
           "dir\\\\/in\\n.pt: arch\\x1b]0;\\x07/da\\xfft\\\\a\\x00.pkl @ 12: corrupt: "
           "global 'os\\nsystem' \"x\\ny\"\\x1b");
  // The fields themselves keep the raw bytes.
  CHECK_EQ(s.record(), "arch\x1b]0;\x07/da\xfft\\a\0.pkl"s);
  CHECK_EQ(s.path(), "dir\\/in\n.pt");
}

TEST_CASE("Status::ToString leaves out unset parts") {
  CHECK_EQ(Status::OK().ToString(), "ok");
  CHECK_EQ(Status::IOError("disk full").ToString(), "io: disk full");
  CHECK_EQ(Status::NotFound("no such file").WithPath("a.pt").ToString(), "a.pt: not found: no such file");
  CHECK_EQ(Status::Corrupt("bad").WithOffset(0).ToString(), "@ 0: corrupt: bad");
  CHECK_EQ(Status::Corrupt("bad").WithRecord("data.pkl").ToString(), "data.pkl: corrupt: bad");
}

TEST_CASE("Status::Of gives the status of a code known at run time") {
  for (Code code : {Code::kCorrupt, Code::kUnsupported, Code::kUnsafe, Code::kLimit, Code::kInvalidArgument,
                    Code::kNotFound, Code::kIO, Code::kInternal, Code::kCancelled, Code::kAmbiguous}) {
    Status s = Status::Of(code, "why");
    CHECK(s.code() == code);
    CHECK(s.message() == "why");
    CHECK(s.path().empty());
    CHECK(s.offset() == kNoOffset);
  }
  // kOk carries no message, and a value outside Code is no code: both kInternal.
  CHECK(Status::Of(Code::kOk, "x").code() == Code::kInternal);
  CHECK(Status::Of(static_cast<Code>(99), "x").code() == Code::kInternal);
  CHECK(Status::Of(static_cast<Code>(9), "x").code() == Code::kInternal);
}

}  // namespace
}  // namespace zerofold
