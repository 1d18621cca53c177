// Deterministic JSON output (RFC 8259): the CLI's --json documents, the
// safetensors header, index.json files.
//
// Two layouts, each matching a reference writer byte for byte:
//   indent == 0  compact, no whitespace at all: serde_json::to_string
//                (what the safetensors reference writes into headers);
//   indent  > 0  one member or item per line, `indent` spaces per level, ": "
//                after keys, "," at line ends, empty containers as {} and []:
//                Python's json.dumps(indent=n) (how transformers writes
//                index.json files).
// String escaping follows both: \" \\ \b \f \n \r \t, other U+0000..U+001F as
// \u00xx (lowercase hex), '/' and everything else as is; with ascii_only, also
// U+007F and above as \uxxxx (surrogate pairs above U+FFFF), like Python's
// default ensure_ascii=True. Members are written in the order given.
//
// Thread safety: a Writer is not thread-safe; the free functions are pure.
#ifndef ZEROFOLD_JSON_WRITER_H_
#define ZEROFOLD_JSON_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "zerofold/result.h"

namespace zerofold::json {

struct WriteOptions {
  // 0: compact (serde_json); n > 0: Python's json.dumps(indent=n) layout.
  uint32_t indent = 0;
  // Escape every non-ASCII character (and DEL) as \uxxxx.
  bool ascii_only = false;
  // Strings and keys that are not valid UTF-8: false makes them a misuse
  // (kInvalidArgument); true writes each byte that does not begin a
  // well-formed sequence as the four characters \xNN (lowercase hex, so the
  // JSON text holds "\\xNN"), as error lines show it (EscapeForDisplay in
  // zerofold/status.h), and the rest of the string exactly. For documents
  // that report names from untrusted files, such as the CLI's --json.
  bool escape_invalid_utf8 = false;
};

// Appends s as a JSON string literal, quotes included.
// kInvalidArgument if s is not valid UTF-8 (unless escape_invalid_utf8);
// *out is unchanged then.
Status AppendString(std::string_view s, const WriteOptions& options, std::string* out);

// s quoted for an error message: JSON escaping, bytes that are not valid
// UTF-8 shown as \xNN, cut after max_bytes input bytes with "..." appended.
// Never fails. Not for output that must parse as JSON.
std::string QuoteForDisplay(std::string_view s, size_t max_bytes = 200);

// Builds one JSON document through calls in document order:
//   Writer w;  w.BeginObject(); w.Key("a"); w.Uint(1); w.EndObject();
//   ZF_ASSIGN_OR_RETURN(std::string text, w.Finish());   // {"a":1}
// Misuse (a value where a key is due, unbalanced containers, invalid UTF-8,
// a non-finite double, a second top-level value) is remembered and reported
// by Finish() as kInvalidArgument; calls after the first misuse are ignored.
class Writer {
 public:
  explicit Writer(WriteOptions options = {}) : options_(options) {}

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // REQUIRES: inside an object, where a key is due.
  void Key(std::string_view key);

  void String(std::string_view s);
  void Uint(uint64_t v);
  void Int(int64_t v);
  // Shortest text that reads back as the same double (std::to_chars), with
  // ".0" added to integral values ("2.0", as serde_json and Python write).
  void Double(double v);
  void Bool(bool v);
  void Null();
  // An array of these strings.
  void Strings(std::span<const std::string> values);
  // Writes a parsed or hand-built tree; numbers keep their text.
  void Write(const Value& v);

  // The finished document, or the first misuse.
  Result<std::string> Finish();

 private:
  struct Level {
    bool is_object;
    bool empty = true;
    bool key_done = false;  // objects: a key was written, its value is due
  };
  bool BeforeValue();  // separators and indentation; false on misuse
  void Fail(std::string message);
  void Newline(size_t depth);
  void Close(bool is_object);

  WriteOptions options_;
  std::string out_;
  std::vector<Level> stack_;
  bool done_ = false;  // a complete top-level value was written
  Status error_;
};

}  // namespace zerofold::json

#endif  // ZEROFOLD_JSON_WRITER_H_
