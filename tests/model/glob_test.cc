#include "model/glob.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::model {
namespace {

TEST_CASE("GlobMatch: *, ?, sets and literal characters") {
  struct Case {
    const char* pattern;
    const char* name;
    bool match;
  } cases[] = {
      {"*", "transformer.wte.weight", true},
      {"*", "", true},
      {"", "", true},
      {"", "a", false},
      {"transformer.h.0.*", "transformer.h.0.ln_1.weight", true},
      {"transformer.h.0.*", "transformer.h.10.ln_1.weight", false},
      {"*.weight", "lm_head.weight", true},
      {"*.weight", "lm_head.bias", false},
      {"*.weight", "weight", false},
      {"?b", "ab", true},
      {"?b", "b", false},
      {"a*b*c", "axxbyyc", true},
      {"a*b*c", "axxbyy", false},
      {"a*b*c", "abcbc", true},
      {"**a", "ba", true},
      {"a[0-9]", "a5", true},
      {"a[0-9]", "ax", false},
      {"a[!0-9]", "a5", false},
      {"a[!0-9]", "ax", true},
      {"a[^0-9]", "ax", true},
      {"[]]", "]", true},
      {"[a-]", "-", true},
      {"[abc].x", "b.x", true},
      {"a[", "a[", true},
      {"a[", "ab", false},
      {"h.[12].*", "h.1.mlp", true},
      {"h.[12].*", "h.3.mlp", false},
      {"exact", "exact", true},
      {"exact", "exactly", false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pattern);
    CAPTURE(c.name);
    CHECK_EQ(GlobMatch(c.pattern, c.name), c.match);
  }
}

TEST_CASE("MatchesAny: any of the patterns; none matches nothing") {
  const std::vector<std::string> patterns = {"*.bias", "embed.*"};
  CHECK(MatchesAny(patterns, "layer.0.bias"));
  CHECK(MatchesAny(patterns, "embed.weight"));
  CHECK_FALSE(MatchesAny(patterns, "layer.0.weight"));
  CHECK_FALSE(MatchesAny(std::vector<std::string>{}, "embed.weight"));
}

}  // namespace
}  // namespace zerofold::model
