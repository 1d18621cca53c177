// CoalescingSource: a RandomSource that turns many small reads into a few
// large ones, for sources where each read is a request (an object store, a
// ranged HTTP GET; the C API's callbacks, capi/callback_env.h).
//
// Readers of the formats make small reads at scattered offsets: a zip's
// end records (a 4 KiB tail, then a few bytes around it), its central
// directory, each record's local header, data.pkl, a legacy file's
// pickles. A read shorter than block_bytes is served from a cache of the
// last `blocks` blocks; on a miss, the block [offset, offset + block_bytes)
// (cut at the end of the source) is read in one request and cached, so the
// small reads that follow in it cost nothing. Reads of block_bytes or more
// (tensor data: the job's buffer) go through uncached, less the part a
// cached block holds at their start (a record's data after its header):
// what is requested stays what the job reads, plus at most one block per
// miss.
//
// Thread safety: ReadAt is thread-safe (one mutex around the cache).
#ifndef ZEROFOLD_IO_COALESCING_SOURCE_H_
#define ZEROFOLD_IO_COALESCING_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::io {

class CoalescingSource final : public RandomSource {
 public:
  static constexpr size_t kDefaultBlockBytes = size_t{64} << 10;
  static constexpr size_t kDefaultBlocks = 8;

  explicit CoalescingSource(std::unique_ptr<RandomSource> base, size_t block_bytes = kDefaultBlockBytes,
                            size_t blocks = kDefaultBlocks)
      : base_(std::move(base)), block_bytes_(block_bytes), blocks_(blocks) {}

  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override;
  uint64_t size() const override { return base_->size(); }
  const std::string& name() const override { return base_->name(); }

 private:
  struct Block {
    uint64_t offset = 0;
    std::vector<std::byte> bytes;  // short only at the end of the source
  };

  std::unique_ptr<RandomSource> base_;
  const size_t block_bytes_;
  const size_t blocks_;
  mutable std::mutex mu_;
  mutable std::list<Block> cache_;  // most recently used first; guarded by mu_
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_COALESCING_SOURCE_H_
