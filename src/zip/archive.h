// Reading zip archives as torch.save writes them (and as other writers,
// e.g. Python's zipfile, rewrite them).
//
// The reader trusts only the central directory: torch's local headers carry
// flags 0x0808 with zero CRC and sizes, a data descriptor follows each
// non-empty record, and data is 64-byte aligned behind an "FB" extra field;
// the reader relies on none of that. Stored (method 0) and deflated
// (method 8, as Python's zipfile and other writers may rewrite a torch
// archive) unencrypted entries are accepted; zip/entry_source.h reads either. Every entry must lie inside the file, entries must
// not overlap each other or the central directory, names must not repeat,
// escape ("../", absolute, backslashes), hold control characters or be
// empty (zip/entry_name.h). For a pipe, see zip/stream_reader.h.
//
// Local headers are read lazily: ReadArchive reads only the end records and
// the central directory (two reads for most archives, however many
// entries), and an entry's local header is read when the entry is opened
// (LocateEntry; ReadEntry locates by itself). Each entry owns the bytes
// from its local header to the next entry's local header (or the central
// directory), so checking each located entry against its own room is the
// same as checking that no two entries overlap.
//
// Thread safety: an Archive is an immutable value after ReadArchive returns.
#ifndef ZEROFOLD_ZIP_ARCHIVE_H_
#define ZEROFOLD_ZIP_ARCHIVE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::zip {

// Entry::data_offset before the entry's local header is read.
inline constexpr uint64_t kUnlocated = UINT64_MAX;

struct Entry {
  std::string name;          // full name as stored, e.g. "archive/data/0"
  uint64_t header_offset = 0;  // of the local file header
  // First byte of the data as stored (compressed when deflated), known once
  // the local header is read (LocateEntry); kUnlocated before.
  uint64_t data_offset = kUnlocated;
  uint64_t size = 0;           // uncompressed size
  uint32_t crc32 = 0;          // from the central directory
  uint16_t method = 0;         // kMethodStored or kMethodDeflated (zip/format.h)
  uint64_t compressed_size = 0;  // bytes at data_offset; == size when stored
  // The local header and the data end at or before this offset: the next
  // entry's local header in file order, or the central directory.
  uint64_t room_end = 0;

  bool deflated() const;
  bool located() const { return data_offset != kUnlocated; }
};

struct ReadOptions {
  // Central directory entries accepted; more is kLimit. Raise for archives
  // with millions of storages.
  uint64_t max_entries = 1u << 22;
  // Central directory bytes read into memory; more is kLimit.
  uint64_t max_central_directory_bytes = 1ull << 30;
};

struct Archive {
  std::vector<Entry> entries;  // in central directory order
  // The folder every entry lives in ("archive", the file's stem, ...).
  // Empty when entries do not share one top folder.
  std::string top_folder;

  // Indices into `entries`, sorted by name; ReadArchive fills it. When it
  // does not match `entries` (an Archive built by hand), Find scans.
  std::vector<size_t> by_name;

  // The entry "<top_folder>/<relative>" (just "<relative>" when top_folder
  // is empty), or nullptr. O(log n) after ReadArchive.
  const Entry* Find(std::string_view relative) const;
  // The entry with this full name, or nullptr.
  const Entry* FindFullName(std::string_view name) const;
};

// Reads the end records and the central directory; reads no local header
// and no entry data (every entry unlocated). Checks that each local header
// offset leaves room for a local header, the entry's name and its data
// before the central directory, and that no two entries share one.
// kAmbiguous where torch could read other bytes (zip/central_directory.h,
// "Parity with torch"): names equal or equal but for case, a second end
// record hidden in a comment, bytes before the first entry, a directory
// entry holding bytes. Errors carry the absolute offset and, once known,
// the entry name as record.
Result<Archive> ReadArchive(const RandomSource& src, const ReadOptions& options = {});

// `entry` with data_offset set: reads its local header (one read: the fixed
// fields and the name) and checks it against the central directory:
// signature, flags and method (kUnsupported for methods other than stored
// and deflated), the name and the encryption flag (kAmbiguous when they
// disagree), and that header and data end within entry.room_end. kCorrupt
// otherwise, record = the entry's name, offset =
// the disagreeing field's. An entry already located is returned as is,
// without a read.
// REQUIRES: entry comes from ReadArchive over `src`.
Result<Entry> LocateEntry(const RandomSource& src, const Entry& entry);

// ReadArchive over bytes in memory (tests, fuzzers, small archives).
// Offsets in the result index `bytes`.
Result<Archive> ReadArchiveBytes(std::span<const std::byte> bytes, const ReadOptions& options = {});


}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_ARCHIVE_H_
