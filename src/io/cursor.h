// Cursor: bounds-checked reads over untrusted bytes.
//
// A Cursor is a span plus the absolute file offset of its first byte. Every
// read checks that enough bytes remain and, on failure, returns kCorrupt at
// the absolute offset where the read started. The Decode* helpers beneath are
// unchecked: callers must have checked the length first.
#ifndef ZEROFOLD_IO_CURSOR_H_
#define ZEROFOLD_IO_CURSOR_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "zerofold/result.h"

namespace zerofold::io {

// Unchecked little-endian decoders. REQUIRES: p points at enough bytes.
inline uint16_t DecodeU16le(const std::byte* p) {
  return static_cast<uint16_t>(std::to_integer<uint16_t>(p[0]) |
                               (std::to_integer<uint16_t>(p[1]) << 8));
}
inline uint32_t DecodeU32le(const std::byte* p) {
  return std::to_integer<uint32_t>(p[0]) | (std::to_integer<uint32_t>(p[1]) << 8) |
         (std::to_integer<uint32_t>(p[2]) << 16) | (std::to_integer<uint32_t>(p[3]) << 24);
}
inline uint64_t DecodeU64le(const std::byte* p) {
  return static_cast<uint64_t>(DecodeU32le(p)) | (static_cast<uint64_t>(DecodeU32le(p + 4)) << 32);
}
// Unchecked little-endian encoders. REQUIRES: p points at enough space.
inline void EncodeU16le(std::byte* p, uint16_t v) {
  p[0] = std::byte(v & 0xff);
  p[1] = std::byte(v >> 8);
}
inline void EncodeU32le(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}
inline void EncodeU64le(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}

class Cursor {
 public:
  Cursor() = default;
  Cursor(std::span<const std::byte> bytes, uint64_t base_offset)
      : bytes_(bytes), base_(base_offset) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  bool empty() const { return remaining() == 0; }
  // Absolute offset of the next byte.
  uint64_t offset() const { return base_ + pos_; }
  size_t position() const { return pos_; }
  std::span<const std::byte> rest() const { return bytes_.subspan(pos_); }

  Result<uint8_t> U8();
  Result<uint16_t> U16le();
  Result<uint32_t> U32le();
  Result<uint64_t> U64le();
  Result<std::span<const std::byte>> Take(size_t n);
  Result<std::string_view> TakeString(size_t n);
  Status Skip(size_t n);
  // Bytes up to (not including) the first `delim`, which is consumed.
  // kCorrupt if no delimiter is found within max_len bytes.
  Result<std::string_view> TakeUntil(std::byte delim, size_t max_len);

 private:
  Status Short(size_t wanted) const;
  std::span<const std::byte> bytes_;
  uint64_t base_ = 0;
  size_t pos_ = 0;
};

inline std::span<const std::byte> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::string_view AsChars(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_CURSOR_H_
