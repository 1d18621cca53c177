// The non-tensor values of a checkpoint that are plain data, as JSON text,
// for safetensors' __metadata__ (a str -> str map), and the others by name.
//
// The walk starts at the root and goes down dicts, OrderedDicts, lists and
// tuples that hold tensors. Each value beside the tensors is one entry,
// keyed by its path as tensor names are ("epoch",
// "optimizer.param_groups"), holding the value as compact JSON text when it
// is plain data: None, bool, int (64-bit), finite float, str, lists and
// tuples of plain data, dicts and OrderedDicts with str or int keys (an int
// key becomes its decimal string, as Python's json.dumps writes it) and
// torch.Size (an array). Anything else (bytes, sets, NaN or infinite floats,
// ints past 64 bits, other objects, nesting past 1000 levels, and values
// whose text would take the values' text past safetensors' 100 MB header
// limit, which shared subgraphs reach from a small pickle) is named in
// `skipped`, as are the non-tensor parts of other objects that hold tensors.
#ifndef ZEROFOLD_MODEL_PLAIN_VALUES_H_
#define ZEROFOLD_MODEL_PLAIN_VALUES_H_

#include <string>
#include <utility>
#include <vector>

#include "torch/checkpoint.h"

namespace zerofold::model {

struct PlainValues {
  std::vector<std::pair<std::string, std::string>> entries;  // path -> JSON text, in document order
  std::vector<std::string> skipped;                          // paths of values that are not plain data
};

// Pure; never fails (what cannot be written is skipped).
PlainValues CollectPlainValues(const torch::Checkpoint& ckpt);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_PLAIN_VALUES_H_
