#include "zip/entry_name.h"

#include <doctest/doctest.h>

#include <string>

namespace zerofold::zip {
namespace {

TEST_CASE("entry names must be canonical relative paths") {
  struct Case {
    std::string name;
    const char* error;  // nullptr when accepted
  };
  const Case kCases[] = {
      {"archive/data.pkl", nullptr},
      {"archive/data/0", nullptr},
      {"version", nullptr},
      {"a/b/", nullptr},  // a folder entry
      {"x..y/..z", nullptr},
      {"caf\xc3\xa9/data.pkl", nullptr},  // UTF-8
      {"", "entry name is empty"},
      {"/etc/passwd", "entry name \"/etc/passwd\" is an absolute path"},
      {"a\\b", "entry name \"a\\x5cb\" contains a backslash"},
      {"../x", "entry name \"../x\" escapes its folder (\"..\")"},
      {"a/../../x", "entry name \"a/../../x\" escapes its folder (\"..\")"},
      {"a/..", "entry name \"a/..\" escapes its folder (\"..\")"},
      {"./x", "entry name \"./x\" has a \".\" component"},
      {"a//b", "entry name \"a//b\" has an empty component"},
      {"a/b//", "entry name \"a/b//\" has an empty component"},
      {std::string("a\0b", 3), "entry name \"a\\x00b\" contains a control character"},
      {"a\nb", "entry name \"a\\x0ab\" contains a control character"},
  };
  for (const Case& c : kCases) {
    CAPTURE(c.name);
    Status s = CheckEntryName(c.name);
    if (c.error == nullptr) {
      CHECK(s.ok());
    } else {
      CHECK_EQ(s.code(), Code::kCorrupt);
      CHECK_EQ(s.message(), c.error);
    }
  }
}

TEST_CASE("TopFolder is the first component") {
  CHECK_EQ(TopFolder("archive/data/0"), "archive");
  CHECK_EQ(TopFolder("version"), "");
  CHECK_EQ(TopFolder("a/"), "a");
}

}  // namespace
}  // namespace zerofold::zip
