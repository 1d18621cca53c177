#include "io/cursor.h"

#include <cstring>
#include <string>

namespace zerofold::io {

Status Cursor::Short(size_t wanted) const {
  return Status::Corrupt("truncated: need " + std::to_string(wanted) + " bytes, " +
                         std::to_string(remaining()) + " left")
      .WithOffset(offset());
}

Result<uint8_t> Cursor::U8() {
  if (remaining() < 1) return Short(1);
  return std::to_integer<uint8_t>(bytes_[pos_++]);
}

Result<uint16_t> Cursor::U16le() {
  if (remaining() < 2) return Short(2);
  uint16_t v = DecodeU16le(bytes_.data() + pos_);
  pos_ += 2;
  return v;
}

Result<uint32_t> Cursor::U32le() {
  if (remaining() < 4) return Short(4);
  uint32_t v = DecodeU32le(bytes_.data() + pos_);
  pos_ += 4;
  return v;
}

Result<uint64_t> Cursor::U64le() {
  if (remaining() < 8) return Short(8);
  uint64_t v = DecodeU64le(bytes_.data() + pos_);
  pos_ += 8;
  return v;
}

Result<std::span<const std::byte>> Cursor::Take(size_t n) {
  if (remaining() < n) return Short(n);
  std::span<const std::byte> out = bytes_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<std::string_view> Cursor::TakeString(size_t n) {
  if (remaining() < n) return Short(n);
  std::string_view out(reinterpret_cast<const char*>(bytes_.data()) + pos_, n);
  pos_ += n;
  return out;
}

Status Cursor::Skip(size_t n) {
  if (remaining() < n) return Short(n);
  pos_ += n;
  return Status::OK();
}

Result<std::string_view> Cursor::TakeUntil(std::byte delim, size_t max_len) {
  size_t limit = remaining() < max_len + 1 ? remaining() : max_len + 1;
  const std::byte* start = bytes_.data() + pos_;
  const void* hit = limit ? std::memchr(start, std::to_integer<int>(delim), limit) : nullptr;
  if (hit == nullptr) {
    if (limit == remaining())
      return Status::Corrupt("truncated: no line end in the " + std::to_string(remaining()) +
                             " bytes left")
          .WithOffset(offset());
    return Status::Corrupt("line longer than " + std::to_string(max_len) + " bytes")
        .WithOffset(offset());
  }
  size_t n = static_cast<const std::byte*>(hit) - start;
  std::string_view out(reinterpret_cast<const char*>(start), n);
  pos_ += n + 1;
  return out;
}

}  // namespace zerofold::io
