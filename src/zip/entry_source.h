// One zip entry's uncompressed bytes seen as a RandomSource: offset 0 is the
// entry's first byte, size() its uncompressed size.
//
// A stored entry reads positionally from the archive (as thread-safe as the
// archive's source). A deflated entry is inflated forward through a fixed
// buffer (zip/inflate.h): reads at increasing offsets cost one pass; a read
// before the current position restarts from the entry's first byte, so
// readers should go forward. Reaching the entry's end (by reads, or Finish)
// checks the deflate stream's sizes against the entry's and the CRC-32.
// The deflated form serialises its callers with a mutex.
//
// Errors name the entry (record) and carry absolute offsets in the archive.
#ifndef ZEROFOLD_ZIP_ENTRY_SOURCE_H_
#define ZEROFOLD_ZIP_ENTRY_SOURCE_H_

#include <memory>

#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"

namespace zerofold::zip {

class EntrySource : public RandomSource {
 public:
  // Reads the rest of a deflated entry, checking its sizes and CRC-32, if
  // reads have not reached its end already. OK at once for stored entries,
  // whose CRC-32 only ReadEntry checks.
  virtual Status Finish() = 0;
};

// REQUIRES: `archive` outlives the result; `entry` is one of its entries
// (ReadArchive checked it lies inside the archive).
std::unique_ptr<EntrySource> OpenEntry(const RandomSource& archive, const Entry& entry);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_ENTRY_SOURCE_H_
