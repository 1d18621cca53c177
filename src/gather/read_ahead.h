// Read-ahead for assembling a sequence of tensors (gather/assemble.h): the
// plan names every byte range the pieces will read before any is read, so
// the files are asked to start reading them (RandomSource::WillNeed) a
// bounded distance before the assembler gets there. Reads then find their
// bytes in the operating system's cache, or in flight, instead of waiting
// for the disk one piece at a time while the writer waits for them.
//
// Each range is placed at the output byte where the assembler needs it:
// the output byte of its piece's first element plus its share of the
// piece's span in the output (a dim-1 piece's rows interleave with the
// others' over the whole tensor; a dim-0 piece is read in one stretch).
// Only pieces read positionally from their file (Transform::kNone) whose
// storage extent is at most twice the bytes of the view are hinted: the
// others read forward through a decompressor, or a small part of a large
// extent.
//
// Memory: the list of ranges (one per granule of each piece). The hints
// cost page cache, never this process's memory. Not thread-safe.
#ifndef ZEROFOLD_GATHER_READ_AHEAD_H_
#define ZEROFOLD_GATHER_READ_AHEAD_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gather/plan.h"

namespace zerofold::gather {

struct AheadRange {
  uint32_t file = 0;       // index into the plan's sources
  uint64_t offset = 0;     // bytes [offset, offset + length) of the file
  uint64_t length = 0;
  uint64_t needed_at = 0;  // output byte, from 0 at the first tensor's first byte

  bool operator==(const AheadRange&) const = default;
};

// The ranges assembling `tensors` in order reads positionally, cut into
// granules of at most `granule` bytes, ordered by needed_at (ties by file
// and offset). REQUIRES: granule > 0; pieces that passed CheckPieceView.
std::vector<AheadRange> PlanReadAhead(std::span<const GatherTensor* const> tensors, uint64_t granule);

class ReadAhead {
 public:
  // REQUIRES: every range's file indexes `sources`, whose sources outlive this.
  ReadAhead(std::span<const SourceFile> sources, std::vector<AheadRange> ranges, uint64_t ahead_bytes);

  // The assembler has reached output byte `position`: hints, in order,
  // every range not hinted yet whose needed_at is below position +
  // ahead_bytes. Positions that go back hint nothing new.
  void Advance(uint64_t position);

  // Ranges hinted so far.
  size_t hinted() const { return next_; }

 private:
  std::span<const SourceFile> sources_;
  std::vector<AheadRange> ranges_;
  uint64_t ahead_bytes_;
  size_t next_ = 0;  // the first range not hinted
};

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_READ_AHEAD_H_
