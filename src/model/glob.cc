#include "model/glob.h"

namespace zerofold::model {

namespace {

// Matches one bracket expression at pattern[*p] ('[' ...) against c.
// Returns false with *p unchanged when the bracket is not closed (the '['
// is then literal); else advances *p past ']' and sets *matched.
bool MatchBracket(std::string_view pattern, size_t* p, char c, bool* matched) {
  size_t i = *p + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  bool found = false;
  bool first = true;
  while (i < pattern.size() && (first || pattern[i] != ']')) {
    first = false;
    char lo = pattern[i];
    char hi = lo;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      hi = pattern[i + 2];
      i += 3;
    } else {
      ++i;
    }
    if (lo <= c && c <= hi) found = true;
  }
  if (i >= pattern.size()) return false;
  *p = i + 1;
  *matched = found != negate;
  return true;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view name) {
  // Greedy with one backtrack point: the last '*' seen, as fnmatch does
  // without FNM_PATHNAME. O(pattern x name) at worst.
  size_t p = 0, n = 0;
  size_t star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size()) {
      char c = pattern[p];
      if (c == '*') {
        star = ++p;
        star_n = n;
        continue;
      }
      if (c == '?') {
        ++p;
        ++n;
        continue;
      }
      if (c == '[') {
        size_t q = p;
        bool matched = false;
        if (MatchBracket(pattern, &q, name[n], &matched)) {
          if (matched) {
            p = q;
            ++n;
            continue;
          }
        } else if (name[n] == '[') {
          ++p;
          ++n;
          continue;
        }
      } else if (c == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool MatchesAny(std::span<const std::string> patterns, std::string_view name) {
  for (const std::string& pattern : patterns)
    if (GlobMatch(pattern, name)) return true;
  return false;
}

}  // namespace zerofold::model
