// A byte range [begin, begin + length) of a RandomSource seen as a source of
// its own: offsets 0..length-1 are the range's bytes. For archives embedded
// in larger files (a DCP chunk inside its .distcp file). Errors and offsets
// of readers above it are relative to the range; the caller adds `begin`.
//
// Thread safety: RangeSource as its inner source (reads are const);
// RangeStream is used by one thread. Neither owns the inner source.
#ifndef ZEROFOLD_IO_RANGE_SOURCE_H_
#define ZEROFOLD_IO_RANGE_SOURCE_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "zerofold/env.h"

namespace zerofold::io {

// REQUIRES: begin + length <= inner.size() (checked by the caller: reads
// past the inner source's end come back short as from any file).
class RangeSource final : public RandomSource {
 public:
  RangeSource(const RandomSource& inner, uint64_t begin, uint64_t length)
      : inner_(inner), begin_(begin), length_(length) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= length_) return size_t{0};
    size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), length_ - offset));
    return inner_.ReadAt(begin_ + offset, dst.first(n));
  }
  uint64_t size() const override { return length_; }
  const std::string& name() const override { return inner_.name(); }

 private:
  const RandomSource& inner_;
  uint64_t begin_;
  uint64_t length_;
};

// The range read forward; position() counts from the range's start.
class RangeStream final : public StreamSource {
 public:
  RangeStream(const RandomSource& inner, uint64_t begin, uint64_t length)
      : inner_(inner), begin_(begin), length_(length) {}
  Result<size_t> Read(std::span<std::byte> dst) override {
    size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), length_ - position_));
    if (n == 0) return size_t{0};
    ZF_ASSIGN_OR_RETURN(size_t got, inner_.ReadAt(begin_ + position_, dst.first(n)));
    position_ += got;
    return got;
  }
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return inner_.name(); }

 private:
  const RandomSource& inner_;
  uint64_t begin_;
  uint64_t length_;
  uint64_t position_ = 0;
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_RANGE_SOURCE_H_
