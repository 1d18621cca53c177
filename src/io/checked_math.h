// Overflow-checked arithmetic for values that come from files.
#ifndef ZEROFOLD_IO_CHECKED_MATH_H_
#define ZEROFOLD_IO_CHECKED_MATH_H_

#include <cstdint>
#include <optional>

namespace zerofold::io {

// nullopt on overflow.
template <typename T>
std::optional<T> CheckedAdd(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
template <typename T>
std::optional<T> CheckedSub(T a, T b) {
  T r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
template <typename T>
std::optional<T> CheckedMul(T a, T b) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// True if [offset, offset + len) lies within [0, size), without overflow.
inline bool RangeInside(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_CHECKED_MATH_H_
