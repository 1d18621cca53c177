// Wording helpers for zip error messages.
#ifndef ZEROFOLD_ZIP_DESCRIBE_H_
#define ZEROFOLD_ZIP_DESCRIBE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace zerofold::zip {

// "0x04034b50": `digits` lowercase hex digits, zero-padded.
std::string Hex(uint64_t value, int digits);

// "8 (deflate)": the APPNOTE 4.4.5 method number and its name when known.
std::string DescribeMethod(uint16_t method);

// The name quoted for a message, with control and non-ASCII bytes escaped
// as \xNN and long names shortened.
std::string Quote(std::string_view name);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_DESCRIBE_H_
