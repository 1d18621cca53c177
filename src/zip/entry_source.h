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
#include <map>
#include <memory>
#include <tuple>
#include <span>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"

namespace zerofold::zip {

class EntrySource : public RandomSource {
 public:
  // Reads the rest of a deflated entry, checking its sizes and CRC-32, if
  // reads have not reached its end already. OK at once for stored entries,
  // whose CRC-32 is checked when reads go through the whole entry front to
  // back (StreamedCrc) and never by an extra read.
  virtual Status Finish() = 0;
};

// REQUIRES: `archive` outlives the result; `entry` is one of its entries,
// located (LocateEntry checked it lies inside its room).
std::unique_ptr<EntrySource> OpenEntry(const RandomSource& archive, const Entry& entry);

// The CRC-32 check of a record read front to back, folded into the reads
// themselves: every byte is folded once as it goes by, and the sum is
// compared when the record's last byte is seen; no byte is read for it. A
// read that skips ahead ends the check for this pass (a part of a record is
// not checked); a later read from offset 0 starts a new pass. Bytes seen
// again (a read behind the furthest one) are not folded twice. A CRC-32 of
// 0 is not recorded (CrcRecorded) and nothing is checked. Not thread-safe.
class StreamedCrc {
 public:
  // `entry`: the record's name, data_offset (for messages), size (the
  // uncompressed bytes a pass must see) and crc32.
  explicit StreamedCrc(const Entry& entry);

  // Sees bytes [pos, pos + bytes.size()) of the record (uncompressed
  // offsets). kCorrupt (record = the entry's name, offset = its data
  // offset) when they end a pass whose CRC-32 differs from the entry's.
  Status See(uint64_t pos, std::span<const std::byte> bytes);

  // True once a pass saw every byte and the CRC-32 matched.
  bool checked() const { return checked_; }

 private:
  std::string name_;
  uint64_t data_offset_ = 0;
  uint64_t size_ = 0;
  uint32_t expected_ = 0;
  uint64_t next_ = 0;  // bytes folded this pass, from offset 0
  uint32_t crc_ = 0;
  bool skipped_ = false;  // this pass skipped bytes
  bool checked_ = false;
};

// StreamedCrc for the stored records of one archive read front to back as
// a whole file (a copy of it): each read of the file feeds the records it
// overlaps. Deflated records and records with no CRC-32 recorded are left
// out. Not thread-safe.
class StreamedCrcs {
 public:
  // REQUIRES: every entry located.
  explicit StreamedCrcs(const std::vector<Entry>& entries);

  // Sees bytes [file_pos, file_pos + bytes.size()) of the archive.
  // kCorrupt as StreamedCrc::See.
  Status See(uint64_t file_pos, std::span<const std::byte> bytes);

 private:
  struct Record {
    uint64_t begin, end;  // data bytes in the file
    StreamedCrc crc;
  };
  std::vector<Record> records_;  // by begin
  size_t first_ = 0;             // records before it ended before the last read
};

// Entries kept open across reads, for readers that go forward through a few
// entries at once (merge reading slices of several ranks' partitions; shrink
// reading views of several storages): each continues inflating where it
// stopped instead of starting again from the entry's first byte. The last
// kOpen deflated entries stay open; stored ones stay open too (they hold no
// buffer; up to kOpenStored, then all are dropped), so that a stored entry
// read front to back over several calls, in pieces, has its CRC-32 checked
// (StreamedCrc). Not thread-safe.
class OpenEntries {
 public:
  static constexpr size_t kOpen = 4;
  static constexpr size_t kOpenStored = size_t{1} << 16;

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
  // By data offset and size: an empty tensor of a safetensors file starts
  // where the next one does.
  std::map<std::tuple<const RandomSource*, uint64_t, uint64_t>, std::unique_ptr<EntrySource>> stored_;
  std::vector<Kept> deflated_;  // most recently used last
};

// Reads an entry whole into memory (inflating a deflated one) and checks
// its CRC-32 against the central directory (unless 0: not recorded); locates it first (LocateEntry,
// and its errors) when it is not located. kLimit when entry.size >
// max_bytes; kCorrupt (record = the entry's name, offset = its data offset)
// on a CRC mismatch, and as zip/inflate.h for a bad deflate stream.
// REQUIRES: entry belongs to an archive read from src.
Result<std::vector<std::byte>> ReadEntry(const RandomSource& src, const Entry& entry,
                                         uint64_t max_bytes);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_ENTRY_SOURCE_H_
