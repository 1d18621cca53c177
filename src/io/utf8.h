// UTF-8 validation and encoding (RFC 3629), shared by error rendering, the JSON reader and
// writer and by the safetensors header check.
//
// Valid means RFC 3629 §4: no overlong forms, no surrogates (U+D800..U+DFFF),
// nothing above U+10FFFF. This is also what Rust's `str::from_utf8` accepts,
// which the safetensors reference uses on its header.
#ifndef ZEROFOLD_IO_UTF8_H_
#define ZEROFOLD_IO_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zerofold::io {

constexpr size_t kValidUtf8 = static_cast<size_t>(-1);

// Length of the well-formed UTF-8 sequence starting at s[0], or 0 if s is
// empty or does not start with one.
size_t Utf8SequenceLength(std::string_view s);

// Index of the first byte that does not start a well-formed sequence, or
// kValidUtf8 if all of s is valid UTF-8.
size_t FirstInvalidUtf8(std::string_view s);

// Appends code point cp as UTF-8. REQUIRES: cp <= 0x10FFFF. A surrogate
// comes out as its three-byte form (what Python's 'surrogatepass' writes),
// which FirstInvalidUtf8 rejects.
void AppendUtf8(uint32_t cp, std::string* out);

// Decodes the sequence of `len` bytes at s[0] (as returned by
// Utf8SequenceLength). REQUIRES: len == Utf8SequenceLength(s) > 0.
uint32_t DecodeUtf8(std::string_view s, size_t len);

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_UTF8_H_
