// The extra field of local and central headers (APPNOTE 4.5): a sequence of
// blocks, each a 2-byte id, a 2-byte data size and the data.
#ifndef ZEROFOLD_ZIP_EXTRA_FIELD_H_
#define ZEROFOLD_ZIP_EXTRA_FIELD_H_

#include <cstdint>
#include <span>

#include "io/cursor.h"
#include "zerofold/result.h"

namespace zerofold::zip {

struct ExtraField {
  bool has_zip64 = false;
  // The zip64 block's data (APPNOTE 4.5.3) with absolute offsets; empty
  // unless has_zip64.
  io::Cursor zip64;
};

// Walks the blocks of `extra`, which starts at absolute `offset`. kCorrupt
// if a block overruns the field or the zip64 block appears twice. Other
// blocks (torch's "FB" padding, timestamps, ...) are skipped.
Result<ExtraField> ParseExtraField(std::span<const std::byte> extra, uint64_t offset);

// Reads the next 8-byte value of a zip64 block, or kCorrupt naming `what`
// (e.g. "the uncompressed size") when the block is too short.
Result<uint64_t> ReadZip64Value(io::Cursor& zip64, const char* what);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_EXTRA_FIELD_H_
