// ReadPlan: the byte ranges of its input files a job reads for tensor data
// (and the other files a folder output copies, whole, after them), in the
// order it reads them, so that a caller whose bytes are remote can
// fetch them ahead in a few large ranged requests.
//
// The planners (gather::AddPieceReads, for every reader of storage bytes)
// append one range per read pass over a storage's bytes; Add merges a
// range into the one before it when both are of one file and they touch or
// overlap. Metadata (zip end records, central directory and local headers,
// pickles, safetensors headers, DCP .metadata) is read before any plan
// exists and is not in it.
//
// Thread safety: a value; not thread-safe.
#ifndef ZEROFOLD_IO_READ_PLAN_H_
#define ZEROFOLD_IO_READ_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace zerofold::io {

struct ReadRange {
  std::string path;  // the input's name, as the job's Env opens it
  uint64_t offset = 0;
  uint64_t length = 0;

  bool operator==(const ReadRange&) const = default;
};

class ReadPlan {
 public:
  // Appends [offset, offset + length) of `path`; an empty range adds nothing.
  // REQUIRES: offset + length does not overflow (ranges lie inside files).
  void Add(const std::string& path, uint64_t offset, uint64_t length) {
    if (length == 0) return;
    if (!ranges_.empty()) {
      ReadRange& last = ranges_.back();
      const uint64_t last_end = last.offset + last.length;
      if (last.path == path && offset <= last_end && last.offset <= offset + length) {
        const uint64_t begin = std::min(last.offset, offset);
        last.length = std::max(last_end, offset + length) - begin;
        last.offset = begin;
        return;
      }
    }
    ranges_.push_back({path, offset, length});
  }

  // Adds each range of `later`, in order.
  void Append(const ReadPlan& later) {
    for (const ReadRange& r : later.ranges_) Add(r.path, r.offset, r.length);
  }

  const std::vector<ReadRange>& ranges() const { return ranges_; }

  // Sum of the ranges' lengths (a byte in two ranges counts twice).
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const ReadRange& r : ranges_) n += r.length;
    return n;
  }

 private:
  std::vector<ReadRange> ranges_;
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_READ_PLAN_H_
