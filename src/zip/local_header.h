// The local file header (APPNOTE 4.3.7), read by the archive reader (to find
// where data starts) and by the stream reader (to walk entries in order).
#ifndef ZEROFOLD_ZIP_LOCAL_HEADER_H_
#define ZEROFOLD_ZIP_LOCAL_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "zerofold/result.h"

namespace zerofold::zip {

struct LocalHeader {
  uint64_t offset = 0;  // absolute offset of the signature
  uint16_t version_needed = 0;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint32_t compressed_size = 0;
  uint32_t uncompressed_size = 0;
  uint16_t name_length = 0;
  uint16_t extra_length = 0;

  // Bytes from the signature to the first data byte.
  uint64_t total_size() const;
};

// Decodes the fixed 30 bytes at absolute `offset`. kCorrupt when the
// signature is not a local header's.
// REQUIRES: fixed.size() == kLocalFileHeaderSize.
Result<LocalHeader> DecodeLocalHeader(std::span<const std::byte> fixed, uint64_t offset);

// kUnsupported for encrypted entries and methods other than stored and
// deflated; the offset is the field's.
Status CheckLocalFlagsAndMethod(const LocalHeader& h);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_LOCAL_HEADER_H_
