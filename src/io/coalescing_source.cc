#include "io/coalescing_source.h"

#include <algorithm>
#include <cstring>

namespace zerofold::io {

Result<size_t> CoalescingSource::ReadAt(uint64_t offset, std::span<std::byte> dst) const {
  if (dst.empty() || offset >= size()) return size_t{0};
  std::unique_lock<std::mutex> lock(mu_);
  if (dst.size() >= block_bytes_) {
    // A large read starting in a cached block (a record's data after its
    // header): the block's part is not requested again.
    size_t head = 0;
    const Block* from = nullptr;
    for (const Block& b : cache_) {
      if (offset < b.offset || offset >= b.offset + b.bytes.size()) continue;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), b.offset + b.bytes.size() - offset));
      if (n > head) head = n, from = &b;
    }
    if (from != nullptr) std::memcpy(dst.data(), from->bytes.data() + (offset - from->offset), head);
    lock.unlock();
    if (head == dst.size()) return head;
    ZF_ASSIGN_OR_RETURN(size_t rest, base_->ReadAt(offset + head, dst.subspan(head)));
    return head + rest;
  }
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    const uint64_t end = it->offset + it->bytes.size();
    if (offset < it->offset || offset >= end) continue;
    // Inside this block: served from it when the block holds all of the
    // read, or when the block ends at the source's end.
    const uint64_t want_end = offset + dst.size();
    if (want_end > end && end < size()) break;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), end - offset));
    std::memcpy(dst.data(), it->bytes.data() + (offset - it->offset), n);
    cache_.splice(cache_.begin(), cache_, it);
    return n;
  }
  Block block;
  block.offset = offset;
  block.bytes.resize(static_cast<size_t>(std::min<uint64_t>(block_bytes_, size() - offset)));
  ZF_ASSIGN_OR_RETURN(size_t got, base_->ReadAt(offset, block.bytes));
  block.bytes.resize(got);
  const size_t n = std::min(dst.size(), got);
  std::memcpy(dst.data(), block.bytes.data(), n);
  cache_.push_front(std::move(block));
  if (cache_.size() > blocks_) cache_.pop_back();
  return n;
}

}  // namespace zerofold::io
