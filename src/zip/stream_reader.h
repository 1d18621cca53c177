// Reading a zip archive forward only, from a pipe: local headers in order,
// then, optionally, the central directory checked against what was read.
//
// A local header need not state its entry's size: torch writes flags 0x0808
// with zero CRC and sizes, and the CRC and sizes follow the data in a data
// descriptor. For such an entry the caller either declares the size (the
// torch layer knows it: storages' sizes come from the pickle) or lets
// ReadAll find the end by scanning for a data descriptor whose CRC-32 and
// sizes match the bytes before it (for small self-delimiting records such
// as data.pkl; the descriptor must carry its signature, as torch's do).
// Deflated entries (method 8) are inflated as they are read (zip/inflate.h:
// a 32 KiB window and a buffer); the deflate stream's own end tells where
// their data ends, so ReadAll and skipping need no declared size, and a
// declared (or stated) size bounds the inflated output exactly.
// Either way the descriptor and the CRC-32 are checked before the entry is
// done.
//
// Typical use:
//   StreamReader r(&src);
//   while (true) {
//     ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
//     if (e == nullptr) break;                      // central directory
//     if (IsPickle(e->name)) { ZF_ASSIGN_OR_RETURN(auto bytes, r.ReadAll(limit)); ... }
//     else { ZF_TRY(r.DeclareSize(n)); while (r.Read(buf) > 0) ...; ZF_TRY(r.FinishEntry()); }
//   }
//   ZF_TRY(r.Finish());                             // optional: central directory and end records
//
// Errors carry the absolute stream offset and, once known, the entry name.
// After an error other than kInvalidArgument the stream position is lost:
// every later call returns that error again. Not thread-safe; the reader does not own the source and must be its only
// user.
#ifndef ZEROFOLD_ZIP_STREAM_READER_H_
#define ZEROFOLD_ZIP_STREAM_READER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"
#include "zip/inflate.h"

namespace zerofold::zip {

struct StreamEntry {
  std::string name;
  uint64_t header_offset = 0;  // of the local header
  uint64_t data_offset = 0;    // first byte of the data
  uint16_t flags = 0;
  bool has_descriptor = false;  // flag 0x08: CRC-32 and sizes follow the data
  uint16_t method = 0;          // kMethodStored or kMethodDeflated
  // The size is known: stated by the local header, declared by the caller,
  // or found by ReadAll.
  bool size_known = false;
  uint64_t size = 0;    // valid when size_known; uncompressed
  uint32_t crc32 = 0;   // the local header's; 0 when has_descriptor
};

class StreamReader {
 public:
  // Reads from src's current position, which must be the archive's first
  // byte. Offsets are src->position() values. `options` caps the entry
  // count (names are kept to refuse duplicates) and the central directory
  // bytes Finish reads.
  explicit StreamReader(StreamSource* src, const ReadOptions& options = {});
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // Finishes the current entry (FinishEntry), then reads the next local
  // header. Returns the entry, valid until the next call, or nullptr when
  // the central directory (or, for an empty archive, the end records) is
  // reached; later calls return nullptr again.
  // kCorrupt: a bad signature or header, a name CheckEntryName refuses, a
  // repeated name, a stream that ends before the central directory.
  // kUnsupported: an encrypted entry, or one compressed by a method other
  // than deflate. kLimit: more entries
  // than ReadOptions::max_entries.
  Result<const StreamEntry*> Next();

  // Declares the current entry's size when its local header does not state
  // it. kInvalidArgument if no entry is current or data was already read;
  // kCorrupt if the header states a different size.
  Status DeclareSize(uint64_t size);

  // Reads up to dst.size() bytes of the current entry's data (inflated when
  // deflated); 0 at its end. The bytes are unverified until FinishEntry
  // returns OK. kInvalidArgument when the size is not known (DeclareSize or
  // ReadAll); kCorrupt as zip/inflate.h for a bad deflate stream.
  Result<size_t> Read(std::span<std::byte> dst);

  // Reads the rest of the current entry and finishes it (FinishEntry):
  // returned bytes have passed the CRC-32 check. With an unknown size,
  // finds the data descriptor by scanning. kLimit when the entry holds
  // more than max_bytes.
  Result<std::vector<std::byte>> ReadAll(uint64_t max_bytes);

  // Reads past the rest of the current entry's data (scanning for its data
  // descriptor when the size is unknown), then checks the data descriptor
  // and the CRC-32. kCorrupt on a mismatch (offset = the descriptor, or the
  // data offset for a CRC-32 mismatch; record = the entry name).
  // OK when no entry is current.
  Status FinishEntry();

  // After Next returned nullptr: reads the central directory and end
  // records to the end of the stream and checks that they list exactly
  // the entries read, with the same offsets, sizes and CRC-32s. Errors as
  // ReadArchive's, plus kCorrupt for any disagreement.
  Status Finish();

  // Absolute offset of the next unread byte.
  uint64_t position() const;

 private:
  enum class State { kBetween, kInEntry, kAtCentralDirectory, kFinished };

  // Records a failure so that later calls repeat it.
  Status Remember(Status status);
  template <typename T>
  Result<T> Remember(Result<T> result) {
    if (!result.ok()) Remember(result.status()).IgnoreError();
    return result;
  }
  Result<const StreamEntry*> NextImpl();
  Result<size_t> ReadImpl(std::span<std::byte> dst);
  Result<std::vector<std::byte>> ReadAllImpl(uint64_t max_bytes);
  Status FinishEntryImpl();
  Status FinishImpl();
  Result<size_t> Fill(size_t want);
  void Consume(size_t n, bool data, std::vector<std::byte>* keep);
  Status ReadLocalHeader();
  Status ScanForDescriptor(std::vector<std::byte>* keep, uint64_t max_keep);
  Status CheckDescriptor(uint64_t compressed_size);
  Status Corrupt(std::string message, uint64_t offset) const;
  // Deflated entries: the inflater over the buffered stream.
  class Feed;
  Result<std::span<const std::byte>> NextCompressed();
  void StartInflate(InflateBound bound);
  Result<size_t> ReadInflated(std::span<std::byte> dst);
  Status FinishInflated();

  struct Seen {
    std::string name;
    uint64_t header_offset;
    uint16_t method;
    uint64_t size;
    uint64_t compressed_size;
    uint32_t crc32;
  };

  StreamSource* src_;
  ReadOptions options_;
  Status failed_;
  State state_ = State::kBetween;
  StreamEntry entry_;
  bool zip64_local_ = false;  // the local header has a zip64 block
  uint64_t done_ = 0;         // data bytes of the current entry consumed (inflated)
  uint32_t crc_ = 0;          // CRC-32 of those bytes
  uint64_t stated_compressed_ = 0;  // the local header's compressed size (no descriptor)
  std::unique_ptr<InflateInput> feed_;
  std::unique_ptr<Inflater> inflater_;
  std::vector<Seen> seen_;
  std::unordered_set<std::string> names_;
  // Bytes read from src_ but not consumed: buf_[begin_, end_).
  std::vector<std::byte> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_STREAM_READER_H_
