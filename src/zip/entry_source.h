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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

// REQUIRES: `archive` outlives the result; `entry` is one of its entries,
// located (LocateEntry checked it lies inside its room).
std::unique_ptr<EntrySource> OpenEntry(const RandomSource& archive, const Entry& entry);

// Entries kept open across reads, for readers that go forward through a few
// entries at once (merge reading slices of several ranks' partitions; shrink
// reading views of several storages): each continues inflating where it
// stopped instead of starting again from the entry's first byte. The last
// kOpen deflated entries stay open; a stored entry is opened afresh on each
// call (it costs nothing). Not thread-safe.
class OpenEntries {
 public:
  static constexpr size_t kOpen = 4;

  // The bytes of `entry` of `archive`, valid until the next call. Closing
  // the least recently used deflated entry finishes it (its sizes and CRC-32
  // are checked): its error is returned. kInternal for an unlocated entry.
  // REQUIRES: as OpenEntry; `archive` outlives this object.
  Result<EntrySource*> Open(const RandomSource& archive, const Entry& entry);

  // Finishes every deflated entry still open (EntrySource::Finish) and
  // closes them; the first error names its archive (path: its name()).
  // Call before committing an output.
  Status Finish();

 private:
  struct Kept {
    const RandomSource* archive;
    uint64_t data_offset;
    std::unique_ptr<EntrySource> source;
  };
  std::unique_ptr<EntrySource> stored_;
  std::vector<Kept> deflated_;  // most recently used last
};

// Reads an entry whole into memory (inflating a deflated one) and checks
// its CRC-32 against the central directory; locates it first (LocateEntry,
// and its errors) when it is not located. kLimit when entry.size >
// max_bytes; kCorrupt (record = the entry's name, offset = its data offset)
// on a CRC mismatch, and as zip/inflate.h for a bad deflate stream.
// REQUIRES: entry belongs to an archive read from src.
Result<std::vector<std::byte>> ReadEntry(const RandomSource& src, const Entry& entry,
                                         uint64_t max_bytes);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_ENTRY_SOURCE_H_
