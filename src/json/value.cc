#include "json/value.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace zerofold::json {

namespace {
const std::string& EmptyString() {
  static const std::string* s = new std::string();
  return *s;
}
const std::vector<Value>& EmptyArray() {
  static const std::vector<Value>* a = new std::vector<Value>();
  return *a;
}
const std::vector<Member>& EmptyMembers() {
  static const std::vector<Member>* m = new std::vector<Member>();
  return *m;
}
}  // namespace

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kNull: return "null";
    case Type::kBool: return "boolean";
    case Type::kNumber: return "number";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
  }
  return "unknown";
}

Value::Value(const Value&) = default;
Value::Value(Value&&) noexcept = default;
Value& Value::operator=(const Value&) = default;
Value& Value::operator=(Value&&) noexcept = default;
Value::Value(Data data, uint64_t offset) : data_(std::move(data)), offset_(offset) {}

Value Value::Null(uint64_t offset) { return Value(Data(std::monostate()), offset); }
Value Value::Bool(bool b, uint64_t offset) { return Value(Data(b), offset); }
Value Value::Number(std::string text, uint64_t offset) {
  return Value(Data(NumberText{std::move(text)}), offset);
}
Value Value::Uint(uint64_t v, uint64_t offset) { return Number(std::to_string(v), offset); }
Value Value::Int(int64_t v, uint64_t offset) { return Number(std::to_string(v), offset); }
Value Value::String(std::string s, uint64_t offset) {
  return Value(Data(std::in_place_type<std::string>, std::move(s)), offset);
}
Value Value::Array(std::vector<Value> items, uint64_t offset) {
  return Value(Data(std::move(items)), offset);
}
Value Value::Object(std::vector<Member> members, uint64_t offset) {
  return Value(Data(std::move(members)), offset);
}

// Children that are containers are moved to a work list before their parent
// dies, so freeing never recurses more than one level.
Value::~Value() {
  std::vector<Value> pending;
  auto take_children = [&pending](Value& v) {
    if (auto* items = std::get_if<std::vector<Value>>(&v.data_)) {
      for (Value& c : *items) {
        if (c.is_array() || c.is_object()) pending.push_back(std::move(c));
      }
      items->clear();
    } else if (auto* members = std::get_if<std::vector<Member>>(&v.data_)) {
      for (Member& m : *members) {
        if (m.value.is_array() || m.value.is_object()) pending.push_back(std::move(m.value));
      }
      members->clear();
    }
  };
  take_children(*this);
  while (!pending.empty()) {
    Value v = std::move(pending.back());
    pending.pop_back();
    take_children(v);
  }
}

bool Value::boolean() const {
  const bool* b = std::get_if<bool>(&data_);
  return b != nullptr && *b;
}
const std::string& Value::string() const {
  const std::string* s = std::get_if<std::string>(&data_);
  return s ? *s : EmptyString();
}
const std::string& Value::number_text() const {
  const NumberText* n = std::get_if<NumberText>(&data_);
  return n ? n->text : EmptyString();
}
const std::vector<Value>& Value::array() const {
  const std::vector<Value>* a = std::get_if<std::vector<Value>>(&data_);
  return a ? *a : EmptyArray();
}
const std::vector<Member>& Value::members() const {
  const std::vector<Member>* m = std::get_if<std::vector<Member>>(&data_);
  return m ? *m : EmptyMembers();
}

bool Value::IsInteger() const {
  if (!is_number()) return false;
  return number_text().find_first_of(".eE") == std::string::npos;
}

namespace {
// The whole of `text` as a T, or nullopt (syntax, sign or range).
template <typename T>
std::optional<T> WholeInteger(const std::string& text) {
  T v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}
}  // namespace

// from_chars for an unsigned type refuses a leading '-', as AsUint64 must.
std::optional<uint64_t> Value::AsUint64() const {
  if (!IsInteger()) return std::nullopt;
  return WholeInteger<uint64_t>(number_text());
}

std::optional<int64_t> Value::AsInt64() const {
  if (!IsInteger()) return std::nullopt;
  return WholeInteger<int64_t>(number_text());
}

std::optional<double> Value::AsDouble() const {
  if (!is_number()) return std::nullopt;
  const std::string& t = number_text();
  double v = 0;
  // from_chars is locale-independent and correctly rounded; it reports
  // values outside double's range as result_out_of_range.
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

const Value* Value::Find(std::string_view key) const {
  for (const Member& m : members()) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }

}  // namespace zerofold::json
