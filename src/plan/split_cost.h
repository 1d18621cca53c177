// What writing one input storage as several exactly sized storages costs in
// the output file, against writing it whole: the bytes of the records as
// torch's zip layout puts them (zip/torch_layout.h: local header, padding to
// 64-byte aligned data, data descriptor, central-directory entry, zip64
// fields) and the pickle bytes that change (a key string per part, the
// numel and offset ints of each view's rebuild call).
//
// Exact but for what lies outside the storage's own records:
//   - the padding of its first record, which depends on where the record
//     before it ends (the run is costed as if that end were 64-aligned), and
//     of the record after it, whose name is taken to be as long as this
//     storage's (each: at most 63 bytes);
//   - pickle memo indices: a key string's BINPUT and each BINGET of it are
//     costed at 2 bytes when the graph has fewer than 256 nodes (every memo
//     index fits in one byte), else at 5 (LONG_BINPUT/LONG_BINGET);
//   - the memo indices of later nodes, which new key strings shift.
// The planner splits only where Delta() is negative, so a storage kept whole
// costs at most these few bytes more than splitting it would have: less
// than RecordOverheadBound().
#ifndef ZEROFOLD_PLAN_SPLIT_COST_H_
#define ZEROFOLD_PLAN_SPLIT_COST_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "torch/checkpoint.h"

namespace zerofold::plan {

// A part of an input storage: bytes [begin, end).
struct Part {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Where a view of the storage goes when it is split.
struct PartView {
  uint32_t tensor = 0;        // index into Checkpoint::tensors
  uint32_t part = 0;          // index into the parts
  int64_t storage_offset = 0; // its offset in the part, in elements
};

class SplitCost {
 public:
  // `record_prefix` is what precedes each key in a storage record's name
  // ("<top folder>/data/"). The checkpoint must outlive this object.
  SplitCost(const torch::Checkpoint& ckpt, std::string record_prefix);

  // Bytes the output file changes by (negative: it gets smaller) when input
  // storage `s` is written as `parts` (in order, at least one) instead of
  // whole, with its views placed as `views` (every tensor of the storage).
  int64_t Delta(uint32_t s, std::span<const Part> parts, std::span<const PartView> views) const;

  // The most one more storage record adds to the file for a key of
  // key_size bytes: local header with the largest padding and zip64 block,
  // zip64 data descriptor, central-directory entry with its zip64 block,
  // and the key string with a LONG_BINPUT.
  uint64_t RecordOverheadBound(size_t key_size) const;

 private:
  const torch::Checkpoint& ckpt_;
  std::string prefix_;
  uint64_t memo_op_size_;  // BINPUT/BINGET (2) or LONG_ (5)
};

}  // namespace zerofold::plan

#endif  // ZEROFOLD_PLAN_SPLIT_COST_H_
