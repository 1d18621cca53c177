// Copies of identical tensor data, found by the xxh3-128 of the bytes
// (torch/digest.h): `scan --hash`. Memory: one entry per distinct hash
// (the first copy's name kept, to name the group), plus the names of the
// further copies.
#ifndef ZEROFOLD_SCAN_DUPLICATES_H_
#define ZEROFOLD_SCAN_DUPLICATES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scan/result.h"
#include "torch/digest.h"

namespace zerofold::scan {

class DuplicateIndex {
 public:
  // One copy of `nbytes` bytes hashing to `hash`, named `where`
  // ("FILE: TENSOR"). Equal hashes of different sizes are different data.
  void Add(const torch::Hash128& hash, uint64_t nbytes, std::string where);
  // The groups of two or more copies, largest waste first (then by hash),
  // and their total waste.
  std::vector<DuplicateGroup> Groups(uint64_t* wasted) const;

 private:
  struct Key {
    uint64_t high, low, nbytes;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  std::map<Key, std::vector<std::string>> copies_;
};

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_DUPLICATES_H_
