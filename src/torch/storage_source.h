// Reading storages' bytes from a torch file, whatever the record's zip
// method: every reader of storage bytes (shrink's copy, merge's assembler,
// the gatherer, verify) goes through For().
//
// A stored record (and every legacy one) is the file itself, shifted:
// positional reads, as fast as the file. A deflated record is inflated
// forward (zip/entry_source.h): memory is the inflater's window plus a
// buffer per open record, never the record; reads should go forward through a storage, as
// a plan's byte ranges do (a read behind the current position re-inflates
// from the record's start). The last zip::OpenEntries::kOpen deflated
// records stay open, so a caller that alternates between a few storages (merge, reading
// slices of several ranks' partitions) keeps its place in each.
//
// Not thread-safe: one StorageSources per thread (the file may be shared).
//
// Big-endian torch archives are read as torch reads them.
//
// A zip archive whose `byteorder` record says "big" is byte-swapped on load
// by torch 2.x on a little-endian machine (torch 1.13 ignores the record
// and reads the bytes as they are). torch 2.6 torch/serialization.py:
// persistent_load (lines 1918-1921) takes the dtype of the pid's storage
// class, torch.uint8 for a torch.UntypedStorage; load_tensor (lines
// 1891-1895) calls storage.byteswap(dtype) when the record differs from
// sys.byteorder; torch/storage.py byteswap (lines 420-426) reverses each
// run of _element_size(dtype) bytes, half that for complex dtypes (their
// real and imaginary parts are swapped apart); torch HEAD does the same. So a
// storage pickled through _rebuild_tensor_v3 (uint16/32/64, float8, ...:
// an UntypedStorage) is never swapped, whatever its tensors' dtype.
//
// zerofold follows it: every reader of values (convert, diff, merge,
// verify, digests) sees little-endian bytes through StorageSources and the
// gatherer, and writers of new archives record "little"; a plain shrink
// copies the bytes and the record as they are.
#ifndef ZEROFOLD_TORCH_STORAGE_SOURCE_H_
#define ZEROFOLD_TORCH_STORAGE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "torch/archive_writer.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"
#include "zip/entry_source.h"

namespace zerofold::torch {

// The run of bytes torch reverses in `s` when loading a big-endian archive:
// 1 (nothing) for an UntypedStorage and one-byte dtypes, else the storage
// dtype's item size, half of it for complex dtypes.
uint32_t ByteSwapUnit(const Storage& s);

// Sets every storage's swap_unit (ByteSwapUnit) when ckpt.big_endian.
void MarkByteSwaps(Checkpoint& ckpt);

// Reverses each run of `unit` bytes of `bytes`. REQUIRES: bytes.size() is a
// multiple of unit.
void SwapBytes(std::span<std::byte> bytes, uint32_t unit);

// A storage record read with each run of `unit` bytes reversed, runs counted
// from the record's first byte: reads at any offset and length.
class SwappedSource : public RandomSource {
 public:
  // REQUIRES: `base` outlives this object; unit >= 1.
  SwappedSource(const RandomSource& base, uint32_t unit) : base_(base), unit_(unit) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override;
  void WillNeed(uint64_t offset, uint64_t length) const override { base_.WillNeed(offset, length); }
  uint64_t size() const override { return base_.size(); }
  const std::string& name() const override { return base_.name(); }

 private:
  const RandomSource& base_;
  const uint32_t unit_;
};

// The name of the byteorder record, relative to an archive's top folder.
bool IsByteOrderRecord(std::string_view relative_name);
// Makes a byteorder record among `extras` say "little": for an archive
// whose storages were written from little-endian reads.
void RecordLittleEndian(std::vector<ExtraRecord>& extras);


// The zip entry a storage's record is (name, offsets, sizes, method, CRC-32).
zip::Entry RecordEntry(const Storage& s);

// Whether reads that go through a whole stored record check its CRC-32
// (zip::StreamedCrc). kSkip for a file this run wrote itself, whose
// --verify digests are compared and name the tensor that differs.
enum class RecordCrc { kCheck, kSkip };

class StorageSources {
 public:
  // Whether storages of a big-endian archive are read as torch loads them
  // (each Storage::swap_unit run of bytes reversed, as above) or
  // as the file holds them (a copy that keeps the byteorder record).
  enum class Bytes : bool { kAsTorchLoads, kAsStored };

  // REQUIRES: `file` outlives this object.
  explicit StorageSources(const RandomSource& file, Bytes bytes = Bytes::kAsTorchLoads,
                          RecordCrc crc = RecordCrc::kCheck)
      : file_(file), bytes_(bytes), crc_(crc) {}

  // The bytes of the record behind `s`, offset 0 being its first byte (read
  // errors carry the record and absolute file offsets). The pointer is valid
  // until the next call. Closing the least recently used deflated record
  // finishes it (its size and CRC-32 are checked): its error is returned.
  // REQUIRES: `s` comes from a checkpoint read from `file`.
  Result<const RandomSource*> For(const Storage& s);

  // Finishes every deflated record still open: reads each to its end and
  // checks its sizes and CRC-32. Call before committing an output.
  Status Finish() { return records_.Finish(); }

 private:
  const RandomSource& file_;
  const Bytes bytes_;
  const RecordCrc crc_;
  zip::OpenEntries records_;  // the last zip::OpenEntries::kOpen deflated ones
  std::unique_ptr<RandomSource> swapped_;  // the last For()'s, when it swaps
};

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_STORAGE_SOURCE_H_
