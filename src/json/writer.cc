#include "json/writer.h"

#include <charconv>
#include <cmath>

#include "io/utf8.h"

namespace zerofold::json {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void AppendU16Escape(uint32_t unit, std::string* out) {
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHexDigits[(unit >> shift) & 0xF]);
}

// The short escapes of RFC 8259 §7, or 0 for none.
char ShortEscape(uint8_t c) {
  switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '\b': return 'b';
    case '\f': return 'f';
    case '\n': return 'n';
    case '\r': return 'r';
    case '\t': return 't';
    default: return 0;
  }
}

}  // namespace

Status AppendString(std::string_view s, const WriteOptions& options, std::string* out) {
  size_t bad = io::FirstInvalidUtf8(s);
  if (bad != io::kValidUtf8 && options.escape_invalid_utf8) {
    std::string valid(s.substr(0, bad));
    for (size_t i = bad; i < s.size();) {
      size_t len = io::Utf8SequenceLength(std::string_view(s.data() + i, s.size() - i));
      if (len == 0) {
        const uint8_t c = static_cast<uint8_t>(s[i]);
        valid.append("\\x");
        valid.push_back(kHexDigits[c >> 4]);
        valid.push_back(kHexDigits[c & 0xF]);
        len = 1;
      } else {
        valid.append(s.data() + i, len);
      }
      i += len;
    }
    return AppendString(valid, options, out);
  }
  if (bad != io::kValidUtf8) {
    return Status::InvalidArgument("JSON output: string is not valid UTF-8 at byte " +
                                   std::to_string(bad) + ": " + QuoteForDisplay(s));
  }
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (char e = ShortEscape(c)) {
      out->push_back('\\');
      out->push_back(e);
      ++i;
    } else if (c < 0x20) {
      AppendU16Escape(c, out);
      ++i;
    } else if (options.ascii_only && c >= 0x7F) {
      size_t len = c < 0x80 ? 1 : io::Utf8SequenceLength(std::string_view(s.data() + i, s.size() - i));
      uint32_t cp = io::DecodeUtf8(std::string_view(s.data() + i, s.size() - i), len);
      if (cp >= 0x10000) {  // RFC 8259 §7: a UTF-16 surrogate pair
        uint32_t v = cp - 0x10000;
        AppendU16Escape(0xD800 + (v >> 10), out);
        AppendU16Escape(0xDC00 + (v & 0x3FF), out);
      } else {
        AppendU16Escape(cp, out);
      }
      i += len;
    } else {
      // A run of bytes written as is (valid UTF-8 was checked above).
      size_t j = i + 1;
      while (j < s.size()) {
        uint8_t d = static_cast<uint8_t>(s[j]);
        if (d < 0x20 || d == '"' || d == '\\' || (options.ascii_only && d >= 0x7F)) break;
        ++j;
      }
      out->append(s.data() + i, j - i);
      i = j;
    }
  }
  out->push_back('"');
  return Status::OK();
}

std::string QuoteForDisplay(std::string_view s, size_t max_bytes) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    size_t len = io::Utf8SequenceLength(std::string_view(s.data() + i, s.size() - i));
    if (len == 0) {
      out.append("\\x");
      out.push_back(kHexDigits[c >> 4]);
      out.push_back(kHexDigits[c & 0xF]);
      ++i;
    } else if (char e = ShortEscape(c)) {
      out.push_back('\\');
      out.push_back(e);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      AppendU16Escape(c, &out);
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  out.push_back('"');
  if (i < s.size()) out.append("...");
  return out;
}

void Writer::Fail(std::string message) {
  if (error_.ok()) error_ = Status::InvalidArgument("JSON output: " + std::move(message));
}

void Writer::Newline(size_t depth) {
  if (options_.indent == 0) return;
  out_.push_back('\n');
  out_.append(depth * options_.indent, ' ');
}

bool Writer::BeforeValue() {
  if (!error_.ok()) return false;
  if (stack_.empty()) {
    if (done_) {
      Fail("a second top-level value");
      return false;
    }
    return true;
  }
  Level& top = stack_.back();
  if (top.is_object) {
    if (!top.key_done) {
      Fail("a value where an object key is due");
      return false;
    }
    top.key_done = false;
    return true;
  }
  if (!top.empty) out_.push_back(',');
  top.empty = false;
  Newline(stack_.size());
  return true;
}

void Writer::BeginObject() {
  if (!BeforeValue()) return;
  out_.push_back('{');
  stack_.push_back(Level{true});
}

void Writer::BeginArray() {
  if (!BeforeValue()) return;
  out_.push_back('[');
  stack_.push_back(Level{false});
}

void Writer::Close(bool is_object) {
  if (!error_.ok()) return;
  if (stack_.empty() || stack_.back().is_object != is_object) {
    Fail(is_object ? "EndObject outside an object" : "EndArray outside an array");
    return;
  }
  if (stack_.back().key_done) {
    Fail("EndObject after a key without a value");
    return;
  }
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) Newline(stack_.size());
  out_.push_back(is_object ? '}' : ']');
  if (stack_.empty()) done_ = true;
}

void Writer::EndObject() { Close(true); }
void Writer::EndArray() { Close(false); }

void Writer::Key(std::string_view key) {
  if (!error_.ok()) return;
  if (stack_.empty() || !stack_.back().is_object || stack_.back().key_done) {
    Fail("a key where a value is due: " + QuoteForDisplay(key));
    return;
  }
  Level& top = stack_.back();
  if (!top.empty) out_.push_back(',');
  top.empty = false;
  Newline(stack_.size());
  Status s = AppendString(key, options_, &out_);
  if (!s.ok()) {
    error_ = std::move(s);
    return;
  }
  out_.append(options_.indent == 0 ? ":" : ": ");
  top.key_done = true;
}

void Writer::String(std::string_view s) {
  if (!BeforeValue()) return;
  Status st = AppendString(s, options_, &out_);
  if (!st.ok()) error_ = std::move(st);
  if (stack_.empty()) done_ = true;
}

void Writer::Uint(uint64_t v) {
  if (!BeforeValue()) return;
  out_.append(std::to_string(v));
  if (stack_.empty()) done_ = true;
}

void Writer::Int(int64_t v) {
  if (!BeforeValue()) return;
  out_.append(std::to_string(v));
  if (stack_.empty()) done_ = true;
}

void Writer::Double(double v) {
  if (!std::isfinite(v)) {
    Fail("a non-finite number, which JSON cannot represent");
    return;
  }
  if (!BeforeValue()) return;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) {
    Fail("std::to_chars failed on a double");
    return;
  }
  std::string_view text(buf, static_cast<size_t>(end - buf));
  out_.append(text);
  if (text.find_first_of(".e") == std::string_view::npos) out_.append(".0");
  if (stack_.empty()) done_ = true;
}

void Writer::Bool(bool v) {
  if (!BeforeValue()) return;
  out_.append(v ? "true" : "false");
  if (stack_.empty()) done_ = true;
}

void Writer::Null() {
  if (!BeforeValue()) return;
  out_.append("null");
  if (stack_.empty()) done_ = true;
}

void Writer::Strings(std::span<const std::string> values) {
  BeginArray();
  for (const std::string& v : values) String(v);
  EndArray();
}

void Writer::Write(const Value& v) {
  // Iterative, like the reader: a hand-built tree may be arbitrarily deep.
  struct Item {
    const Value* value;
    size_t next;  // next child to write
  };
  std::vector<Item> todo;
  auto open = [&](const Value& x) {
    switch (x.type()) {
      case Type::kNull: Null(); break;
      case Type::kBool: Bool(x.boolean()); break;
      case Type::kNumber:
        if (!BeforeValue()) return;
        out_.append(x.number_text());
        if (stack_.empty()) done_ = true;
        break;
      case Type::kString: String(x.string()); break;
      case Type::kArray:
        BeginArray();
        todo.push_back({&x, 0});
        break;
      case Type::kObject:
        BeginObject();
        todo.push_back({&x, 0});
        break;
    }
  };
  open(v);
  while (!todo.empty() && error_.ok()) {
    Item& top = todo.back();
    const Value& container = *top.value;
    if (container.is_array()) {
      if (top.next == container.array().size()) {
        todo.pop_back();
        EndArray();
        continue;
      }
      open(container.array()[top.next++]);
    } else {
      if (top.next == container.members().size()) {
        todo.pop_back();
        EndObject();
        continue;
      }
      const Member& m = container.members()[top.next++];
      Key(m.key);
      open(m.value);
    }
  }
}

Result<std::string> Writer::Finish() {
  if (!error_.ok()) return error_;
  if (!stack_.empty()) return Status::InvalidArgument("JSON output: unclosed array or object");
  if (!done_) return Status::InvalidArgument("JSON output: no value was written");
  return std::move(out_);
}

}  // namespace zerofold::json
