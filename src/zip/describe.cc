#include "zip/describe.h"

#include <string>

namespace zerofold::zip {

std::string Hex(uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0 && value != 0; --i, value >>= 4) out[i] = kDigits[value & 0xf];
  return "0x" + out;
}

std::string DescribeMethod(uint16_t method) {
  const char* name = nullptr;
  switch (method) {  // APPNOTE 4.4.5
    case 0: name = "stored"; break;
    case 1: name = "shrink"; break;
    case 6: name = "implode"; break;
    case 8: name = "deflate"; break;
    case 9: name = "deflate64"; break;
    case 12: name = "bzip2"; break;
    case 14: name = "lzma"; break;
    case 93: name = "zstd"; break;
    case 95: name = "xz"; break;
    case 99: name = "AES encryption"; break;
    default: break;
  }
  std::string out = std::to_string(method);
  if (name != nullptr) out += std::string(" (") + name + ")";
  return out;
}

std::string Quote(std::string_view name) {
  constexpr size_t kMaxShown = 200;
  std::string out = "\"";
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += "\\x" + Hex(c, 2).substr(2);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (name.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

}  // namespace zerofold::zip
