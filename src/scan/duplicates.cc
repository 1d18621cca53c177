#include "scan/duplicates.h"

#include <algorithm>

namespace zerofold::scan {

void DuplicateIndex::Add(const torch::Hash128& hash, uint64_t nbytes, std::string where) {
  copies_[Key{hash.high, hash.low, nbytes}].push_back(std::move(where));
}

std::vector<DuplicateGroup> DuplicateIndex::Groups(uint64_t* wasted) const {
  std::vector<DuplicateGroup> out;
  *wasted = 0;
  for (const auto& [key, names] : copies_) {
    if (names.size() < 2) continue;
    DuplicateGroup g;
    g.hash = torch::Hash128{key.low, key.high}.Hex();
    g.nbytes = key.nbytes;
    g.copies = names;
    *wasted += g.wasted();
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DuplicateGroup& a, const DuplicateGroup& b) { return a.wasted() > b.wasted(); });
  return out;
}

}  // namespace zerofold::scan
