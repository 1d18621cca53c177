#include "json/reader.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "io/utf8.h"
#include "json/writer.h"

namespace zerofold::json {

namespace {

bool IsWhitespace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }  // §2
bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }

int HexValue(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A byte as it appears in a message: 'x' when printable ASCII, else 0xNN.
std::string Describe(uint8_t c) {
  if (c >= 0x21 && c <= 0x7E) return std::string("'") + static_cast<char>(c) + "'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xF];
}

// A container under construction, with the key its next value belongs to.
struct Frame {
  Value container;
  std::string key;
  uint64_t key_offset = kNoOffset;
};

// Scans the text left to right. Every access goes through At()/Peek() after
// an explicit bounds check against in_.size(): a text tokenizer's version of
// the bounds-checked Cursor (io/cursor.h).
class Parser {
 public:
  Parser(std::string_view in, const ParseOptions& options, uint64_t base)
      : in_(in), options_(options), base_(base) {}

  Result<Value> Run();

 private:
  bool AtEnd() const { return pos_ >= in_.size(); }
  uint8_t At(size_t i) const { return static_cast<uint8_t>(in_[i]); }  // REQUIRES: i < size
  uint64_t Abs(size_t i) const { return base_ + i; }
  void SkipWhitespace() {
    while (pos_ < in_.size() && IsWhitespace(At(pos_))) ++pos_;
  }
  Status Error(size_t at, std::string message) const {
    return std::move(Status::Corrupt("JSON: " + std::move(message)).WithOffset(Abs(at)));
  }
  Status Unexpected(std::string_view expected) const {
    if (AtEnd()) return Error(pos_, "unexpected end of input, expected " + std::string(expected));
    return Error(pos_, "unexpected " + Describe(At(pos_)) + ", expected " + std::string(expected));
  }

  Status CountValue();
  Status ParseString(std::string* out);
  Status ParseNumber(std::string* out);
  Status ParseLiteral(std::string_view word);
  Status ParseKey(Frame* frame);
  Status CheckDuplicateKeys(const std::vector<Member>& members) const;

  std::string_view in_;
  const ParseOptions& options_;
  uint64_t base_;
  size_t pos_ = 0;
  uint64_t values_ = 0;
};

Status Parser::CountValue() {
  if (++values_ > options_.max_values) {
    return std::move(Status::Limit("JSON: more than " + std::to_string(options_.max_values) +
                                   " values (ParseOptions::max_values)")
                         .WithOffset(Abs(pos_)));
  }
  return Status::OK();
}

// RFC 8259 §7. REQUIRES: At(pos_) == '"'.
Status Parser::ParseString(std::string* out) {
  const size_t start = pos_;
  ++pos_;
  out->clear();
  while (true) {
    if (AtEnd()) return Error(start, "unterminated string");
    uint8_t c = At(pos_);
    if (c == '"') {
      ++pos_;
      return Status::OK();
    }
    if (c == '\\') {
      if (pos_ + 1 >= in_.size()) return Error(start, "unterminated string");
      uint8_t e = At(pos_ + 1);
      char simple = 0;
      switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default: return Error(pos_, "invalid escape \\" + std::string(1, static_cast<char>(e)));
      }
      if (simple != 0) {
        out->push_back(simple);
        pos_ += 2;
        continue;
      }
      auto read_unit = [&](size_t at, uint32_t* unit) -> bool {
        // "\uXXXX" at `at`.
        if (in_.size() - at < 6 || At(at) != '\\' || At(at + 1) != 'u') return false;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) {
          int h = HexValue(At(at + 2 + k));
          if (h < 0) return false;
          v = (v << 4) | static_cast<uint32_t>(h);
        }
        *unit = v;
        return true;
      };
      uint32_t unit = 0;
      if (!read_unit(pos_, &unit)) return Error(pos_, "\\u escape needs 4 hex digits");
      if (unit >= 0xDC00 && unit <= 0xDFFF) {
        return Error(pos_, "lone low surrogate in \\u escape");
      }
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        uint32_t low = 0;
        if (!read_unit(pos_ + 6, &low) || low < 0xDC00 || low > 0xDFFF) {
          return Error(pos_, "high surrogate in \\u escape not followed by a low surrogate");
        }
        io::AppendUtf8(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), out);
        pos_ += 12;
      } else {
        io::AppendUtf8(unit, out);
        pos_ += 6;
      }
      continue;
    }
    if (c < 0x20) return Error(pos_, "unescaped control character " + Describe(c) + " in string");
    if (c >= 0x80) {
      size_t len = io::Utf8SequenceLength(std::string_view(in_.data() + pos_, in_.size() - pos_));
      if (len == 0) return Error(pos_, "invalid UTF-8 in string");
      out->append(in_.data() + pos_, len);
      pos_ += len;
      continue;
    }
    // A run of plain ASCII, copied at once.
    size_t j = pos_ + 1;
    while (j < in_.size()) {
      uint8_t d = At(j);
      if (d == '"' || d == '\\' || d < 0x20 || d >= 0x80) break;
      ++j;
    }
    out->append(in_.data() + pos_, j - pos_);
    pos_ = j;
  }
}

// RFC 8259 §6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
Status Parser::ParseNumber(std::string* out) {
  const size_t start = pos_;
  if (At(pos_) == '-') ++pos_;
  if (AtEnd() || !IsDigit(At(pos_))) return Unexpected("a digit");
  if (At(pos_) == '0') {
    ++pos_;
    if (!AtEnd() && IsDigit(At(pos_))) return Error(start, "leading zero in number");
  } else {
    while (!AtEnd() && IsDigit(At(pos_))) ++pos_;
  }
  if (!AtEnd() && At(pos_) == '.') {
    ++pos_;
    if (AtEnd() || !IsDigit(At(pos_))) return Unexpected("a digit after '.'");
    while (!AtEnd() && IsDigit(At(pos_))) ++pos_;
  }
  if (!AtEnd() && (At(pos_) == 'e' || At(pos_) == 'E')) {
    ++pos_;
    if (!AtEnd() && (At(pos_) == '+' || At(pos_) == '-')) ++pos_;
    if (AtEnd() || !IsDigit(At(pos_))) return Unexpected("a digit in the exponent");
    while (!AtEnd() && IsDigit(At(pos_))) ++pos_;
  }
  out->assign(in_.data() + start, pos_ - start);
  return Status::OK();
}

Status Parser::ParseLiteral(std::string_view word) {
  if (in_.size() - pos_ < word.size() || std::memcmp(in_.data() + pos_, word.data(), word.size()) != 0) {
    return Error(pos_, "invalid literal, expected '" + std::string(word) + "'");
  }
  pos_ += word.size();
  return Status::OK();
}

// A key and its ':' (§4). Leaves pos_ where the value starts (after spaces).
Status Parser::ParseKey(Frame* frame) {
  SkipWhitespace();
  if (AtEnd() || At(pos_) != '"') return Unexpected("a string key");
  frame->key_offset = Abs(pos_);
  ZF_TRY(ParseString(&frame->key));
  SkipWhitespace();
  if (AtEnd() || At(pos_) != ':') return Unexpected("':' after the key");
  ++pos_;
  return Status::OK();
}

// Sorting keys finds duplicates in O(n log n) without a hash set per object.
// The error names the duplicate that comes first in the document.
Status Parser::CheckDuplicateKeys(const std::vector<Member>& members) const {
  if (options_.allow_duplicate_keys || members.size() < 2) return Status::OK();
  std::vector<uint32_t> order(members.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return members[a].key < members[b].key; });
  const Member* first = nullptr;  // earlier occurrence of the reported duplicate
  const Member* second = nullptr;
  for (size_t i = 1; i < order.size(); ++i) {
    const Member& a = members[order[i - 1]];
    const Member& b = members[order[i]];
    if (a.key == b.key && (second == nullptr || b.key_offset < second->key_offset)) {
      // a is the previous occurrence of the same key (stable sort).
      first = &a;
      second = &b;
    }
  }
  if (second == nullptr) return Status::OK();
  // Report against the first occurrence of the key, not just the previous one.
  for (const Member& m : members) {
    if (m.key == second->key) {
      first = &m;
      break;
    }
  }
  return std::move(Status::Corrupt("JSON: duplicate key " + QuoteForDisplay(second->key) +
                                   " (first at offset " + std::to_string(first->key_offset) + ")")
                       .WithOffset(second->key_offset));
}

Result<Value> Parser::Run() {
  if (in_.size() > options_.max_bytes) {
    return std::move(Status::Limit("JSON: document is " + std::to_string(in_.size()) +
                                   " bytes, limit " + std::to_string(options_.max_bytes) +
                                   " (ParseOptions::max_bytes)")
                         .WithOffset(base_));
  }
  if (in_.size() >= 3 && At(0) == 0xEF && At(1) == 0xBB && At(2) == 0xBF) {
    return Error(0, "byte order mark before the text (RFC 8259 section 8.1)");
  }
  std::vector<Frame> stack;
  std::string scratch;
  while (true) {
    // A value is due here.
    SkipWhitespace();
    if (AtEnd()) return Unexpected("a value");
    const size_t value_pos = pos_;
    ZF_TRY(CountValue());
    Value value;
    bool complete = true;  // false when a container was opened
    switch (At(pos_)) {
      case '{':
      case '[': {
        const bool is_object = At(pos_) == '{';
        if (stack.size() >= options_.max_depth) {
          if (options_.depth_is_format_rule) {
            return Error(pos_, "nesting deeper than " + std::to_string(options_.max_depth));
          }
          return std::move(Status::Limit("JSON: nesting deeper than " +
                                         std::to_string(options_.max_depth) +
                                         " (ParseOptions::max_depth)")
                               .WithOffset(Abs(pos_)));
        }
        ++pos_;
        stack.emplace_back();
        stack.back().container =
            is_object ? Value::Object({}, Abs(value_pos)) : Value::Array({}, Abs(value_pos));
        SkipWhitespace();
        if (!AtEnd() && At(pos_) == (is_object ? '}' : ']')) {
          ++pos_;
          value = std::move(stack.back().container);
          stack.pop_back();
        } else if (is_object) {
          ZF_TRY(ParseKey(&stack.back()));
          complete = false;
        } else {
          complete = false;
        }
        break;
      }
      case '"':
        ZF_TRY(ParseString(&scratch));
        value = Value::String(std::move(scratch), Abs(value_pos));
        scratch = std::string();
        break;
      case 't':
        ZF_TRY(ParseLiteral("true"));
        value = Value::Bool(true, Abs(value_pos));
        break;
      case 'f':
        ZF_TRY(ParseLiteral("false"));
        value = Value::Bool(false, Abs(value_pos));
        break;
      case 'n':
        ZF_TRY(ParseLiteral("null"));
        value = Value::Null(Abs(value_pos));
        break;
      default:
        if (At(pos_) == '-' || IsDigit(At(pos_))) {
          ZF_TRY(ParseNumber(&scratch));
          value = Value::Number(scratch, Abs(value_pos));
          break;
        }
        return Unexpected("a value");
    }
    if (!complete) continue;

    // Attach the finished value to its parent; close every container that
    // ends right after it; stop where the next value is due.
    while (true) {
      if (stack.empty()) {
        SkipWhitespace();
        if (!AtEnd()) return Error(pos_, "unexpected " + Describe(At(pos_)) + " after the value");
        return value;
      }
      Frame& top = stack.back();
      const bool is_object = top.container.is_object();
      if (is_object) {
        top.container.mutable_members()->push_back(
            Member{std::move(top.key), top.key_offset, std::move(value)});
        top.key = std::string();
      } else {
        top.container.mutable_array()->push_back(std::move(value));
      }
      SkipWhitespace();
      if (!AtEnd() && At(pos_) == ',') {
        ++pos_;
        if (is_object) ZF_TRY(ParseKey(&top));
        break;  // the next value is due
      }
      if (!AtEnd() && At(pos_) == (is_object ? '}' : ']')) {
        ++pos_;
        if (is_object) ZF_TRY(CheckDuplicateKeys(top.container.members()));
        value = std::move(top.container);
        stack.pop_back();
        continue;
      }
      return Unexpected(is_object ? "',' or '}'" : "',' or ']'");
    }
  }
}

}  // namespace

Result<Value> Parse(std::string_view text, const ParseOptions& options, uint64_t base_offset) {
  Parser parser(text, options, base_offset);
  return parser.Run();
}

Result<Value> Parse(std::span<const std::byte> text, const ParseOptions& options,
                    uint64_t base_offset) {
  return Parse(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), options,
               base_offset);
}

}  // namespace zerofold::json
