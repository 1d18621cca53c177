// The Distributed Checkpoint .metadata interpreter (src/dcp/metadata.h):
// the whole file, then key selection over what it read. Property: a
// default selection names only tensor keys, each once, with a name each.
// fuzz-seeds: fixtures/dcp/*/ckpt/.metadata fixtures/dcp/bad/*/.metadata fixtures/dcp/*/ckpt/*/.metadata
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "dcp/metadata.h"
#include "dcp/plan.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<dcp::Metadata> md = dcp::ReadMetadata(fuzz::Bytes(data, size));
  if (!md.ok()) return 0;
  Result<dcp::Selection> selection = dcp::SelectKeys(*md, std::nullopt);
  if (!selection.ok()) return 0;
  if (selection->entries.size() != selection->names.size()) abort();
  std::set<size_t> seen;
  for (size_t i : selection->entries) {
    if (i >= md->entries.size() || !md->entries[i].is_tensor || !seen.insert(i).second) abort();
  }
  return 0;
}
