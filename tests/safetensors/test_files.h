// Builders for safetensors test files, written from the format description
// (format.h), independent of the reader and writer under test.
#ifndef ZEROFOLD_TESTS_SAFETENSORS_TEST_FILES_H_
#define ZEROFOLD_TESTS_SAFETENSORS_TEST_FILES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zerofold::safetensors::testing {

inline void AppendU64le(uint64_t v, std::vector<std::byte>* out) {
  for (int i = 0; i < 8; ++i) out->push_back(std::byte((v >> (8 * i)) & 0xff));
}

// Data byte i of a test buffer: a pattern that catches shifted copies.
inline std::byte PatternByte(uint64_t i) { return std::byte((i * 7 + 3) % 251); }

// The 8-byte length `n`, then `header` as is, then `data_len` pattern bytes.
inline std::vector<std::byte> FileWithLength(uint64_t n, std::string_view header, size_t data_len) {
  std::vector<std::byte> out;
  AppendU64le(n, &out);
  for (char c : header) out.push_back(std::byte(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < data_len; ++i) out.push_back(PatternByte(i));
  return out;
}

// A file whose length field is the header's true size.
inline std::vector<std::byte> File(std::string_view header, size_t data_len) {
  return FileWithLength(header.size(), header, data_len);
}

inline std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(std::byte(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace zerofold::safetensors::testing

#endif  // ZEROFOLD_TESTS_SAFETENSORS_TEST_FILES_H_
