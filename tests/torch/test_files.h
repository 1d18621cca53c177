// Test helper: fixture files from the repo root (ZF_SOURCE_ROOT).
#ifndef ZEROFOLD_TESTS_TORCH_TEST_FILES_H_
#define ZEROFOLD_TESTS_TORCH_TEST_FILES_H_

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace zerofold::torch::testing {

inline std::string Root() { return ZF_SOURCE_ROOT; }

// The bytes of `rel`, a path relative to the repo root. Fails the test
// when the file is missing or empty.
inline std::vector<std::byte> FixtureBytes(const std::string& rel) {
  std::ifstream f(Root() + "/" + rel, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(!s.empty(), rel);
  std::vector<std::byte> out(s.size());
  std::transform(s.begin(), s.end(), out.begin(), [](char c) { return std::byte(static_cast<unsigned char>(c)); });
  return out;
}

}  // namespace zerofold::torch::testing

#endif  // ZEROFOLD_TESTS_TORCH_TEST_FILES_H_
