// A strict JSON reader (RFC 8259) for untrusted input: safetensors headers,
// Hugging Face index.json files, anything else the project reads as JSON.
//
// Strict means exactly the RFC 8259 grammar: whitespace is space, tab, LF and
// CR only; no comments, trailing commas, single quotes, NaN/Infinity, leading
// zeros or '+' signs; no byte order mark; strings are valid UTF-8 (§8.1) with
// control characters escaped, and \u escapes must form whole code points (a
// lone surrogate is refused). One value per document, then only whitespace.
//
// The reader never recurses: nesting is tracked on a heap stack capped by
// ParseOptions::max_depth. Errors carry the absolute offset of the byte at
// fault (base_offset + index), are kCorrupt for malformed input, and kLimit
// when a ParseOptions limit is hit (the message names the option).
//
// Thread safety: Parse is a pure function; call it from any thread.
#ifndef ZEROFOLD_JSON_READER_H_
#define ZEROFOLD_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "json/value.h"
#include "zerofold/result.h"

namespace zerofold::json {

struct ParseOptions {
  // Deepest nesting of arrays and objects accepted (a scalar document has
  // depth 0, `[[]]` depth 2). 128 is serde_json's default recursion limit.
  uint32_t max_depth = 128;
  // How deeper nesting fails: kLimit (a caller's limit, which a flag may
  // raise) or, when the format itself caps nesting, kCorrupt.
  bool depth_is_format_rule = false;
  // Largest document accepted, in bytes; checked before parsing.
  uint64_t max_bytes = uint64_t{256} << 20;
  // Most values (scalars and containers; keys not counted) accepted. Bounds
  // the tree's memory, about 50 bytes a value, independently of max_bytes.
  uint64_t max_values = 10'000'000;
  // false: an object with two members of the same key (compared after
  // unescaping) is kCorrupt at the second key. true: both are kept, in order.
  bool allow_duplicate_keys = false;
};

// Parses one JSON text. `base_offset` is the absolute offset of text[0] in
// the file, used for Value::offset() and error offsets.
// On success returns the tree. On failure returns kCorrupt (malformed text)
// or kLimit (an option's limit), with the absolute offset set.
Result<Value> Parse(std::string_view text, const ParseOptions& options = {},
                    uint64_t base_offset = 0);
Result<Value> Parse(std::span<const std::byte> text, const ParseOptions& options = {},
                    uint64_t base_offset = 0);

}  // namespace zerofold::json

#endif  // ZEROFOLD_JSON_READER_H_
