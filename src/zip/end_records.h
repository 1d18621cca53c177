// Finding the central directory: the end of central directory record
// (APPNOTE 4.3.16), found by scanning back over the comment, and the zip64
// locator and end record (APPNOTE 4.3.14-15) when a locator precedes it.
#ifndef ZEROFOLD_ZIP_END_RECORDS_H_
#define ZEROFOLD_ZIP_END_RECORDS_H_

#include <cstdint>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::zip {

struct EndRecords {
  uint64_t entries = 0;           // total central directory entries
  uint64_t cd_offset = 0;         // first byte of the central directory
  uint64_t cd_size = 0;           // its size in bytes
  uint64_t eocd_offset = 0;       // the end of central directory record
  bool zip64 = false;             // a zip64 locator and end record are present
  uint64_t zip64_eocd_offset = 0; // the zip64 end record, when zip64
  // The first byte after the central directory: the zip64 end record when
  // present, else the end record. The central directory ends exactly here.
  uint64_t end_records_offset = 0;
};

// Reads and cross-checks the end records of `src`.
// kCorrupt: no end record in the last 65557 bytes, a zip64 record out of
// bounds or with a bad signature, values that disagree between the two
// records, or a central directory that does not end where the end records
// start. kUnsupported: a multi-disk archive. Offsets are absolute.
Result<EndRecords> ReadEndRecords(const RandomSource& src);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_END_RECORDS_H_
