// The entries of a merged state dict: which names are written, in which
// order, which of them hold data and which share another's (ties), after
// --only. Pure: from a gather plan's names and the order a planner prefers.
#ifndef ZEROFOLD_GATHER_LAYOUT_H_
#define ZEROFOLD_GATHER_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gather/plan.h"
#include "output/sharding.h"
#include "zerofold/result.h"

namespace zerofold::gather {

struct OutputEntry {
  std::string name;
  size_t tensor = 0;  // index into GatherPlan::tensors: the data
  // A tie shares the data of entry `owner` (an index into
  // MergeLayout::entries, of an earlier entry that is no tie): torch output
  // shares the owner's storage, safetensors output writes a copy. For an
  // entry that is no tie, `owner` is its own index.
  bool tie = false;
  size_t owner = 0;
};

struct MergeLayout {
  std::vector<OutputEntry> entries;  // output order
};

// Output formats: those of Hugging Face shards (output/sharding.h).
using MergeFormat = output::ShardFormat;

// "torch", "safetensors".
std::string_view MergeFormatName(MergeFormat format);

// One output file and the entries it holds.
struct MergeOutputFile {
  std::string path;
  uint64_t bytes = 0;           // file size (exact, also for dry runs)
  std::vector<size_t> entries;  // indexes into MergeLayout::entries, ascending
};

// Orders the plan's tensors and ties: first the names of `order` (a
// planner's preference, e.g. the module state dict's order; names the plan
// does not hold are skipped), then the plan's remaining tensors and ties in
// plan order. With `only` patterns (any matching selects): a tensor is kept
// if its name matches; a tie is kept if its owner is kept or its own name
// matches; a tie kept without its owner holds the data itself, and later
// kept ties of the same owner share it. kInvalidArgument (listing the
// pattern) when `only` is non-empty and no name matches; kInternal for a
// tie to a name the plan does not hold.
Result<MergeLayout> LayOut(std::span<const std::string> tensor_names, std::span<const Tie> ties,
                           std::span<const std::string> order, std::span<const std::string> only);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_LAYOUT_H_
