#include "pickle/long.h"

#include <algorithm>
#include <vector>

namespace zerofold::pickle {

namespace {

uint8_t ByteAt(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

bool IsNegative(std::string_view le) { return !le.empty() && (ByteAt(le, le.size() - 1) & 0x80) != 0; }

// Two's complement negation in place.
void Negate(std::string* le) {
  unsigned carry = 1;
  for (char& c : *le) {
    unsigned v = (~static_cast<uint8_t>(c) & 0xffu) + carry;
    c = static_cast<char>(v & 0xff);
    carry = v >> 8;
  }
}

}  // namespace

std::optional<int64_t> LongToInt64(std::string_view le) {
  le = TrimLong(le);
  if (le.size() > 8) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < le.size(); ++i) v |= static_cast<uint64_t>(ByteAt(le, i)) << (8 * i);
  if (IsNegative(le) && le.size() < 8) v |= ~uint64_t{0} << (8 * le.size());  // sign-extend
  return static_cast<int64_t>(v);
}

std::string Int64ToLong(int64_t v) {
  std::string out;
  uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  out.resize(TrimLong(out).size());
  return out;
}

std::string_view TrimLong(std::string_view le) {
  size_t n = le.size();
  if (n == 0) return le;
  bool negative = IsNegative(le);
  uint8_t pad = negative ? 0xff : 0x00;
  // A top byte equal to the padding is redundant when the byte below it
  // already carries the same sign.
  while (n > 1 && ByteAt(le, n - 1) == pad && ((ByteAt(le, n - 2) & 0x80) != 0) == negative) --n;
  if (n == 1 && ByteAt(le, 0) == 0) n = 0;  // zero is the empty payload
  return le.substr(0, n);
}

bool DecimalToLong(std::string_view text, std::string* out) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  // Magnitude in base 2^32 limbs, least significant first: for each chunk of
  // up to 9 digits, mag = mag * 10^len + chunk.
  std::vector<uint32_t> mag;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = std::min<size_t>(9, text.size() - pos);
    uint64_t mul = 1, chunk = 0;
    for (size_t i = 0; i < len; ++i) {
      mul *= 10;
      chunk = chunk * 10 + static_cast<uint64_t>(text[pos + i] - '0');
    }
    pos += len;
    uint64_t carry = chunk;
    for (uint32_t& limb : mag) {
      uint64_t v = static_cast<uint64_t>(limb) * mul + carry;
      limb = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry) mag.push_back(static_cast<uint32_t>(carry));
  }
  std::string le;
  for (uint32_t limb : mag)
    for (int i = 0; i < 4; ++i) le.push_back(static_cast<char>((limb >> (8 * i)) & 0xff));
  le.push_back('\0');  // room for the sign bit
  if (negative) Negate(&le);
  le.resize(TrimLong(le).size());
  *out = std::move(le);
  return true;
}

std::string LongToDecimal(std::string_view le) {
  le = TrimLong(le);
  bool negative = IsNegative(le);
  std::string mag(le);
  if (negative) Negate(&mag);
  // Repeated division of the little-endian magnitude by 10^9.
  std::vector<uint32_t> chunks;
  std::vector<uint8_t> num(mag.begin(), mag.end());
  while (!num.empty() && num.back() == 0) num.pop_back();
  while (!num.empty()) {
    uint64_t rem = 0;
    for (size_t i = num.size(); i-- > 0;) {
      uint64_t cur = (rem << 8) | num[i];
      num[i] = static_cast<uint8_t>(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    chunks.push_back(static_cast<uint32_t>(rem));
    while (!num.empty() && num.back() == 0) num.pop_back();
  }
  std::string out = negative ? "-" : "";
  if (chunks.empty()) return "0";
  out += std::to_string(chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    std::string part = std::to_string(chunks[i]);
    out.append(9 - part.size(), '0');
    out += part;
  }
  return out;
}

}  // namespace zerofold::pickle
