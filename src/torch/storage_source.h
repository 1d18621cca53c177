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
#ifndef ZEROFOLD_TORCH_STORAGE_SOURCE_H_
#define ZEROFOLD_TORCH_STORAGE_SOURCE_H_

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"
#include "zip/archive.h"
#include "zip/entry_source.h"

namespace zerofold::torch {

// The zip entry a storage's record is (name, offsets, sizes, method, CRC-32).
zip::Entry RecordEntry(const Storage& s);

// Whether reads that go through a whole stored record check its CRC-32
// (zip::StreamedCrc). kSkip for a file this run wrote itself, whose
// --verify digests are compared and name the tensor that differs.
enum class RecordCrc { kCheck, kSkip };

class StorageSources {
 public:
  // REQUIRES: `file` outlives this object.
  explicit StorageSources(const RandomSource& file, RecordCrc crc = RecordCrc::kCheck) : file_(file), crc_(crc) {}

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
  const RecordCrc crc_;
  zip::OpenEntries records_;  // the last zip::OpenEntries::kOpen deflated ones
};

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_STORAGE_SOURCE_H_
