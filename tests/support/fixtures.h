// Test helper: fixture files as bytes, for tests that run shrink in memory.
#ifndef ZEROFOLD_TESTS_SUPPORT_FIXTURES_H_
#define ZEROFOLD_TESTS_SUPPORT_FIXTURES_H_

#include <doctest/doctest.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::testing {

// The bytes of fixtures/REL (REQUIREs that it reads).
inline std::vector<std::byte> Fixture(const std::string& rel) {
  Result<std::string> text = Env::Default()->ReadSmallFile(std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel, 1 << 26);
  REQUIRE(text.ok());
  std::span<const std::byte> b = std::as_bytes(std::span<const char>(text->data(), text->size()));
  return std::vector<std::byte>(b.begin(), b.end());
}

inline std::vector<std::byte> Text(std::string_view s) {
  std::span<const std::byte> b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return std::vector<std::byte>(b.begin(), b.end());
}

}  // namespace zerofold::testing

#endif  // ZEROFOLD_TESTS_SUPPORT_FIXTURES_H_
