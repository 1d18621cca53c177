// Test helpers shared by the stream tests (tests/torch/stream_*_test.cc,
// tests/shrink/stream_*_test.cc): which fixtures to stream, and small archives
// in a chosen record order.
#ifndef ZEROFOLD_TESTS_TORCH_STREAM_FIXTURES_H_
#define ZEROFOLD_TESTS_TORCH_STREAM_FIXTURES_H_

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "io/mem.h"
#include "zip/test_util.h"
#include "zip/writer.h"

namespace zerofold::torch::testing {

using zip::testing::ReadFileBytes;
using zip::testing::SourceRoot;

// The .pt and .bin files below these fixture folders ("torch", "hf", ...), sorted.
inline std::vector<std::string> FixtureFiles(std::initializer_list<const char*> folders) {
  std::vector<std::string> out;
  for (const char* folder : folders) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(SourceRoot() + "/fixtures/" + folder)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".pt" || ext == ".bin")) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

using Records = std::vector<std::pair<std::string, std::vector<std::byte>>>;

// A zip archive of `records` under "top/", in this order, each written as
// torch writes records (data descriptor, no sizes in the local header).
inline std::vector<std::byte> ArchiveOf(const Records& records) {
  io::MemSink sink;
  zip::Writer w(&sink);
  for (const auto& [name, bytes] : records) REQUIRE(w.AddEntry("top/" + name, bytes).ok());
  REQUIRE(w.Finish().ok());
  return sink.bytes();
}

inline std::vector<std::byte> TextBytes(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::transform(s.begin(), s.end(), b.begin(), [](char c) { return std::byte(c); });
  return b;
}

}  // namespace zerofold::torch::testing

#endif  // ZEROFOLD_TESTS_TORCH_STREAM_FIXTURES_H_
