#include "pickle/text_args.h"

#include <charconv>
#include <cstring>

#include "io/utf8.h"

namespace zerofold::pickle {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool ParseDecimal(std::string_view text, int64_t* value, bool* fits) {
  std::string_view digits = text;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
  if (digits.empty()) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  // from_chars takes no '+'; a leading '-' it handles itself.
  std::string_view parse = text[0] == '+' ? digits : text;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(parse.data(), parse.data() + parse.size(), v);
  *fits = ec == std::errc() && end == parse.data() + parse.size();
  if (*fits) *value = v;
  return true;
}

std::optional<double> ParseFloat(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // Out of range gives result_out_of_range; Python gives inf or 0 there, but
  // its repr never writes such text.
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

bool DecodeStringEscape(std::string_view body, std::string* out, std::string* why) {
  std::string s;
  s.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      s.push_back(c);
      continue;
    }
    if (i + 1 == body.size()) {
      *why = "trailing \\ at byte " + std::to_string(i);
      return false;
    }
    char e = body[++i];
    switch (e) {
      case '\n': break;
      case '\\': s.push_back('\\'); break;
      case '\'': s.push_back('\''); break;
      case '"': s.push_back('"'); break;
      case 'a': s.push_back('\a'); break;
      case 'b': s.push_back('\b'); break;
      case 'f': s.push_back('\f'); break;
      case 'n': s.push_back('\n'); break;
      case 'r': s.push_back('\r'); break;
      case 't': s.push_back('\t'); break;
      case 'v': s.push_back('\v'); break;
      case 'x': {
        int hi = i + 1 < body.size() ? HexValue(body[i + 1]) : -1;
        int lo = i + 2 < body.size() ? HexValue(body[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
          *why = "invalid \\x escape at byte " + std::to_string(i - 1);
          return false;
        }
        s.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + (body[++i] - '0');
          s.push_back(static_cast<char>(v & 0xff));  // "\777" wraps, as Python's does
        } else {
          s.push_back('\\');
          s.push_back(e);
        }
    }
  }
  *out = std::move(s);
  return true;
}

bool DecodeRawUnicodeEscape(std::string_view text, std::string* utf8, std::string* why) {
  std::string s;
  s.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c != '\\') {
      io::AppendUtf8(c, &s);  // Latin-1
      ++i;
      continue;
    }
    size_t run = 0;
    while (i + run < text.size() && text[i + run] == '\\') ++run;
    size_t next = i + run;
    bool escape = run % 2 == 1 && next < text.size() && (text[next] == 'u' || text[next] == 'U');
    s.append(escape ? run - 1 : run, '\\');
    i = next;
    if (!escape) continue;
    size_t digits = text[next] == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (size_t k = 0; k < digits; ++k) {
      int h = next + 1 + k < text.size() ? HexValue(text[next + 1 + k]) : -1;
      if (h < 0) {
        *why = "truncated \\" + std::string(1, text[next]) + " escape at byte " + std::to_string(next - 1);
        return false;
      }
      cp = cp * 16 + static_cast<uint32_t>(h);
    }
    if (cp > 0x10ffff) {
      *why = "\\U escape past U+10FFFF at byte " + std::to_string(next - 1);
      return false;
    }
    io::AppendUtf8(cp, &s);
    i = next + 1 + digits;
  }
  *utf8 = std::move(s);
  return true;
}

bool IsUtf8(std::string_view s, size_t* bad_at) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      *bad_at = i;
      return false;
    }
    if (n - i < len) {
      *bad_at = i;
      return false;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) {
        *bad_at = i;
        return false;
      }
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff) {
      *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace zerofold::pickle
