// Arguments of the protocol-0 text opcodes and string payload checks.
//
// Each parser takes the text of one line (without its '\n') and returns
// false with `*why` set when the text is malformed; outputs are untouched on
// failure. Nothing here allocates more than a constant factor of its input.
#ifndef ZEROFOLD_PICKLE_TEXT_ARGS_H_
#define ZEROFOLD_PICKLE_TEXT_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zerofold::pickle {

// `[+-]?[0-9]+` (pickletools: decimalnl_short, decimalnl_long without the
// 'L'). True for such text; `*fits` tells whether it fits in int64, and
// `*value` holds it when it does.
bool ParseDecimal(std::string_view text, int64_t* value, bool* fits);

// Python's float repr ("1.5", "1e-08", "inf", "-nan"; pickletools: floatnl).
std::optional<double> ParseFloat(std::string_view text);

// The body of a STRING argument, its quotes removed, unescaped as Python's
// bytes literal escapes (PyBytes_DecodeEscape): \\ \' \" \a \b \f \n \r \t
// \v, \ooo, \xhh, backslash-newline; any other backslash stays literal.
bool DecodeStringEscape(std::string_view body, std::string* out, std::string* why);

// A UNICODE argument: raw-unicode-escape text (bytes are Latin-1 code
// points; \uXXXX and \UXXXXXXXX after an odd run of backslashes) as UTF-8.
// Lone surrogates are kept, encoded as three bytes each (as 'surrogatepass').
bool DecodeRawUnicodeEscape(std::string_view text, std::string* utf8, std::string* why);

// True for UTF-8 as Python decodes BINUNICODE ('surrogatepass': encoded
// surrogates allowed; overlong forms and code points past U+10FFFF are not).
// On false, `*bad_at` is the index of the first byte of the bad sequence.
bool IsUtf8(std::string_view s, size_t* bad_at);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_TEXT_ARGS_H_
