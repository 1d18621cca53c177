// Parsing the central directory (APPNOTE 4.3.12) with zip64 extra fields
// (APPNOTE 4.5.3).
#ifndef ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_
#define ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerofold/result.h"

namespace zerofold::zip {

struct CentralEntry {
  std::string name;
  uint64_t offset = 0;         // of this central directory header
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t size = 0;           // uncompressed
  uint64_t compressed_size = 0;  // == size when stored
  uint64_t header_offset = 0;  // of the local header
};

// Parses exactly `count` entries from `bytes`, the whole central directory,
// which starts at absolute offset `offset`. Each entry's 0xFFFFFFFF fields
// are replaced by its zip64 extra field's values.
// kUnsupported (record = entry name): a method other than stored and
// deflated, an encrypted entry, an entry starting on another disk.
// kCorrupt: a bad signature, a truncated entry, a missing or short zip64
// field, a stored entry whose compressed and uncompressed sizes differ, a
// deflated entry of more than 1032 bytes per compressed byte (more than
// deflate can encode), a name that
// CheckEntryName refuses, or bytes left after `count` entries.
// REQUIRES: the caller has capped `count` and bytes.size() (ReadOptions).
Result<std::vector<CentralEntry>> ParseCentralDirectory(std::span<const std::byte> bytes,
                                                        uint64_t offset, uint64_t count);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_
