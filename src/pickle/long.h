// Integers as LONG1/LONG4 carry them (pickletools: long1): two's complement,
// little-endian, any length; the empty payload is 0. A Kind::kBigInt node
// holds such a payload.
#ifndef ZEROFOLD_PICKLE_LONG_H_
#define ZEROFOLD_PICKLE_LONG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zerofold::pickle {

// The value of a payload, or nullopt when it does not fit in int64.
std::optional<int64_t> LongToInt64(std::string_view le);

// The shortest payload for v, as CPython's pickler writes it (encode_long):
// empty for 0, else the fewest bytes whose top bit is the sign.
std::string Int64ToLong(int64_t v);

// `le` without redundant sign bytes: the shortest payload of the same value.
std::string_view TrimLong(std::string_view le);

// The payload for decimal text `[+-]?[0-9]+`; false (out untouched) for
// anything else. Time is quadratic in the digits: callers cap their number.
bool DecimalToLong(std::string_view text, std::string* out);

// Decimal text of a payload ("-123").
std::string LongToDecimal(std::string_view le);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_LONG_H_
