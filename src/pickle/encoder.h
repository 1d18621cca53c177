// Pickle encoder: writes a Graph as protocol 2 with the opcodes CPython's
// pickler (as used by torch.save) emits for the same values, so that an
// unchanged graph decoded from a torch-written data.pkl re-encodes to the
// same bytes: memo every node CPython would memoize (BINPUT/LONG_BINPUT),
// BINGET/LONG_BINGET for nodes already written, smallest int opcode, batched
// APPENDS/SETITEMS of at most 1000 items (single item: APPEND/SETITEM),
// TUPLE1/2/3, EMPTY_TUPLE, GLOBAL "module\nname\n", BINPERSID.
#ifndef ZEROFOLD_PICKLE_ENCODER_H_
#define ZEROFOLD_PICKLE_ENCODER_H_

#include <cstdint>
#include <vector>

#include "pickle/graph.h"
#include "zerofold/result.h"

namespace zerofold::pickle {

// kInvalidArgument for values protocol 2 cannot express as written (kBytes
// and kByteArray nodes, which protocol 2 pickles as _codecs.encode calls; the
// decoder only yields them from protocol 3+ input; likewise kSet, kFrozenSet
// and NEWOBJ_EX objects, and node ids outside the graph), kLimit for nesting
// past max_depth. Cycles through containers are written as CPython does (the
// memo breaks them; a tuple or object reached through itself is popped and
// fetched from the memo). Batches follow _pickle.c exactly: a list or dict
// node as batch_list_exact/batch_dict_exact (a dict of 1000 entries ends
// with an empty MARK SETITEMS), an object's list_items/dict_items as
// batch_list/batch_dict (a last batch of one is APPEND/SETITEM). Iterative:
// no recursion on the C stack, whatever the depth.
//
// Known limit of the round trip: when CPython's pickler reaches an object
// through its own REDUCE arguments, it writes a second copy that the decoder
// drops (POP), so the graph no longer holds it and re-encoding differs.
// Python's pickler never does that for the values torch.save writes.
Result<std::vector<std::byte>> Encode(const Graph& graph, NodeId root, uint32_t max_depth = 100000);

// Bytes Encode writes for an int node of value v (opcode and argument).
size_t IntOpSize(int64_t v);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_ENCODER_H_
