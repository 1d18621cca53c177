// json::Value: the tree a JSON document (RFC 8259) parses into.
//
// Objects keep their members in document order, duplicates included (the
// reader rejects duplicate keys unless asked to keep them). Numbers keep the
// text they were written with; AsUint64/AsInt64/AsDouble convert it when the
// value fits the type exactly. Every value parsed from a document records the
// absolute offset of its first byte, for error messages.
//
// A Value is a plain value type: copyable, movable, no shared state.
// Destruction is iterative, so any depth is safe to free; copying and ==
// recurse once per level of nesting (parsed trees are bounded by
// ParseOptions::max_depth).
#ifndef ZEROFOLD_JSON_VALUE_H_
#define ZEROFOLD_JSON_VALUE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "zerofold/status.h"

namespace zerofold::json {

enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

// "null", "boolean", "number", "string", "array", "object".
std::string_view TypeName(Type type);

struct Member;

class Value {
 public:
  // Null, with no offset.
  Value() = default;
  // Defined in value.cc, where Member is complete.
  Value(const Value&);
  Value(Value&&) noexcept;
  Value& operator=(const Value&);
  Value& operator=(Value&&) noexcept;
  ~Value();

  static Value Null(uint64_t offset = kNoOffset);
  static Value Bool(bool b, uint64_t offset = kNoOffset);
  // REQUIRES: text matches the RFC 8259 `number` grammar (the reader checks;
  // code building values by hand must pass such text).
  static Value Number(std::string text, uint64_t offset = kNoOffset);
  static Value Uint(uint64_t v, uint64_t offset = kNoOffset);
  static Value Int(int64_t v, uint64_t offset = kNoOffset);
  // REQUIRES: s is valid UTF-8 (the writer refuses it otherwise).
  static Value String(std::string s, uint64_t offset = kNoOffset);
  static Value Array(std::vector<Value> items, uint64_t offset = kNoOffset);
  static Value Object(std::vector<Member> members, uint64_t offset = kNoOffset);

  Type type() const { return static_cast<Type>(data_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_number() const { return type() == Type::kNumber; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Absolute offset of the value's first byte in the parsed input, or
  // kNoOffset for values built in code.
  uint64_t offset() const { return offset_; }

  // Typed access. On a value of another type these return false, an empty
  // string or an empty list: they never throw or abort.
  bool boolean() const;
  const std::string& string() const;       // decoded, UTF-8
  const std::string& number_text() const;  // as written, e.g. "-1.5e3"
  const std::vector<Value>& array() const;
  const std::vector<Member>& members() const;
  // Mutable access for code that builds or edits trees. REQUIRES: the type.
  std::vector<Value>* mutable_array() { return std::get_if<std::vector<Value>>(&data_); }
  std::vector<Member>* mutable_members() { return std::get_if<std::vector<Member>>(&data_); }

  // Numbers, converted exactly. nullopt if this is not a number or the
  // number has no exact value of that type:
  //   AsUint64  integer text (no '-', fraction or exponent) below 2^64;
  //   AsInt64   integer text (no fraction or exponent) in [-2^63, 2^63);
  //   AsDouble  any number whose magnitude is within double's finite range;
  //             the result is the nearest double (round-to-nearest-even),
  //             exact only where the decimal value is representable.
  std::optional<uint64_t> AsUint64() const;
  std::optional<int64_t> AsInt64() const;
  std::optional<double> AsDouble() const;
  // True for a number written without fraction or exponent ("-0" included).
  bool IsInteger() const;

  // The first member named key, or nullptr (also when this is not an object).
  // Linear in the number of members.
  const Value* Find(std::string_view key) const;

  // Structural equality: same type and content; offsets are ignored, numbers
  // compare by text, objects by members in order.
  friend bool operator==(const Value& a, const Value& b);

 private:
  struct NumberText {
    std::string text;
    friend bool operator==(const NumberText&, const NumberText&) = default;
  };
  using Data = std::variant<std::monostate, bool, NumberText, std::string, std::vector<Value>,
                            std::vector<Member>>;
  Value(Data data, uint64_t offset);

  Data data_;
  uint64_t offset_ = kNoOffset;
};

// One member of an object, in document order.
struct Member {
  std::string key;                  // decoded, UTF-8
  uint64_t key_offset = kNoOffset;  // absolute offset of the key's opening quote
  Value value;
  friend bool operator==(const Member& a, const Member& b) {
    return a.key == b.key && a.value == b.value;
  }
};

}  // namespace zerofold::json

#endif  // ZEROFOLD_JSON_VALUE_H_
