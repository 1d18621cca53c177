#include "io/utf8.h"

namespace zerofold::io {

namespace {
inline uint8_t At(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }
inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }
}  // namespace

// RFC 3629 §4, "UTF8-octets" grammar: the second byte's range depends on the
// first byte, which rules out overlongs, surrogates and values past U+10FFFF.
size_t Utf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  uint8_t b0 = At(s, 0);
  if (b0 < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong 4-byte forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (s.size() < len) return 0;
  uint8_t b1 = At(s, 1);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (!IsCont(At(s, i))) return 0;
  }
  return len;
}

size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (At(s, i) < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(std::string_view(s.data() + i, s.size() - i));
    if (len == 0) return i;
    i += len;
  }
  return kValidUtf8;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t DecodeUtf8(std::string_view s, size_t len) {
  uint32_t b0 = At(s, 0);
  switch (len) {
    case 1: return b0;
    case 2: return ((b0 & 0x1F) << 6) | (At(s, 1) & 0x3F);
    case 3: return ((b0 & 0x0F) << 12) | ((At(s, 1) & 0x3Fu) << 6) | (At(s, 2) & 0x3F);
    default:
      return ((b0 & 0x07) << 18) | ((At(s, 1) & 0x3Fu) << 12) | ((At(s, 2) & 0x3Fu) << 6) |
             (At(s, 3) & 0x3F);
  }
}

}  // namespace zerofold::io
