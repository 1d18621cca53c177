// Reading a torch file in one forward pass, from a pipe or a zstd stream,
// for archives laid out as torch.save writes them.
//
// Zip archives (torch/serialization.py _save): data.pkl comes before every
// storage record. Its pickle names every storage key and byte size, and
// torch writes each data/<key> record with exactly that many bytes, so the
// reader can declare each storage record's size to the zip stream reader
// (zip/stream_reader.h) though the local headers state none. Other records
// (version, byteorder, .data/serialization_id, ...) may come anywhere; they
// are small and found by their data descriptors, and kept in memory. A
// record under data/ that no storage names is skipped. After the last entry
// the central directory is checked against what was read.
//
// Legacy files (torch/legacy.h): the five pickles are self-delimiting; the
// key list gives the order of the storages, each an int64 count and its
// bytes, so every storage's offset is known before its bytes arrive.
//
// What a pipe cannot give, because it would mean going back or holding a
// storage in memory, is kUnsupported with advice to read the file by path:
// a storage record before data.pkl. The order in which storages arrive is
// the caller's concern: NextStorage reports each as it comes.
//
// Typical use:
//   StreamCheckpointReader r(&src, options);
//   ZF_TRY(r.ReadModel());                 // r.checkpoint() is now complete
//   while (true) {
//     ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> s, r.NextStorage());
//     if (!s) break;
//     while ((n = r.Read(buf)) > 0) ...    // bytes of storages[*s]
//   }
//   ZF_TRY(r.Finish());                    // other records, central directory
//
// Memory: O(data.pkl + other records + a 64 KiB buffer); storage bytes are
// only passed through. Not thread-safe; the reader does not own `src` and
// must be its only user.
#ifndef ZEROFOLD_TORCH_STREAM_CHECKPOINT_H_
#define ZEROFOLD_TORCH_STREAM_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// Other records are held in memory; larger ones are kLimit, as when
// ShrinkFile reads them from a file.
constexpr uint64_t kMaxOtherRecordBytes = uint64_t{1} << 20;

// A zip record other than data.pkl and data/*, read whole (CRC-32 checked).
struct OtherRecord {
  zip::Entry entry;              // name, offsets, size and CRC-32 as read
  std::vector<std::byte> bytes;
};

class StreamCheckpointReader {
 public:
  // Reads from src's current position, which must be the file's first byte.
  StreamCheckpointReader(StreamSource* src, const ReadOptions& options = {});
  ~StreamCheckpointReader();
  StreamCheckpointReader(const StreamCheckpointReader&) = delete;
  StreamCheckpointReader& operator=(const StreamCheckpointReader&) = delete;

  // Reads up to the end of the pickle that describes the checkpoint (zip:
  // data.pkl and any records before it; legacy: through the key list) and
  // builds checkpoint(), views checked as ReadCheckpoint checks them.
  // Storage fields not yet seen are filled as torch's layout implies:
  //   record_size  = nbytes (checked when the record comes);
  //   data_offset  zip: the storage's rank in string order of the keys,
  //                the order torch writes the records in (the real offset
  //                replaces it when the record comes); legacy: the real
  //                offset, computed from the key list.
  // Errors as ReadCheckpoint's for the same bytes, with offsets in the
  // stream, plus kUnsupported for a storage record before data.pkl.
  Status ReadModel();

  // REQUIRES: ReadModel returned OK. The model; storages' data_offset and
  // record_size are updated as NextStorage meets their records.
  Checkpoint& checkpoint();
  const Checkpoint& checkpoint() const;

  // Moves to the next storage record, skipping the unread rest of the
  // current one, and returns its index in checkpoint().storages, or nullopt
  // when the archive has no more (zip: the central directory is next). Other
  // records met on the way are kept (other_records()).
  // kCorrupt: a storage record shorter than its storage, a legacy count that
  // disagrees with the storage, a storage without a record (at the end),
  // records outside the top folder, damage the zip reader finds;
  // kUnsupported: a TorchScript record; kLimit: an other record above
  // kMaxOtherRecordBytes.
  Result<std::optional<uint32_t>> NextStorage();

  // Reads up to dst.size() bytes of the current storage (its first nbytes
  // bytes); 0 at their end. The bytes of a zip record are verified against
  // its CRC-32 only when the record is finished (by NextStorage or Finish):
  // a caller must not trust them before that returns OK.
  // kCorrupt when the stream ends inside them.
  Result<size_t> Read(std::span<std::byte> dst);

  // Skips the remaining storages, reads the rest of the input (zip: the
  // other records, then the central directory and end records, checked
  // against the entries read; legacy: any trailing bytes, which torch
  // ignores) and checks that every storage had its record.
  Status Finish();

  // Zip records other than data.pkl and data/*, in stream order. Complete
  // after Finish.
  const std::vector<OtherRecord>& other_records() const;

  // Bytes consumed from the source (after Finish: its size).
  uint64_t position() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_STREAM_CHECKPOINT_H_
