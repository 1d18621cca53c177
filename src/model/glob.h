// --only PATTERN: shell-style patterns over tensor names, as merge, convert
// and shrink take them.
#ifndef ZEROFOLD_MODEL_GLOB_H_
#define ZEROFOLD_MODEL_GLOB_H_

#include <span>
#include <string>
#include <string_view>

namespace zerofold::model {

// True if `name` matches the shell-style `pattern`: `*` any run of
// characters (dots included), `?` one character, `[abc]`, `[a-z]`, `[!a]`
// one character of (not of) a set; anything else matches itself. A `[`
// without its `]` matches itself.
bool GlobMatch(std::string_view pattern, std::string_view name);

// True if `name` matches one of `patterns`.
bool MatchesAny(std::span<const std::string> patterns, std::string_view name);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_GLOB_H_
