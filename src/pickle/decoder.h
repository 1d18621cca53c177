// Pickle decoder, protocols 0-5, into a Graph. Nothing is imported or called.
//
// Globals are recorded as symbolic (module, name) nodes, named as written
// (protocol 2 writes "__builtin__" for builtins). Those not on an allowlist
// (see safety.h; judged by the name Python imports under the protocol of the
// last PROTO before them) are listed in Decoded::unsafe_globals, named as
// written; decoding still succeeds, since we never call them.
// builtins.getattr is judged by its use: REDUCE(getattr, (G, "name")) with G
// an allowed global and "name" an identifier not starting with "__" is how
// Python >= 3.11 pickles an Enum member and is safe; any other use of
// getattr, or calling or building what such a REDUCE made, is unsafe.
//
// Hostile input fails fast with kCorrupt or kLimit: every declared length is
// checked against the bytes left before anything is allocated, and nesting,
// memo, stack and node counts are capped by DecodeLimits. The decoder keeps
// its own stack: input cannot make it recurse.
//
// How opcodes map to nodes, where it is not one to one:
//   STRING, BINSTRING, SHORT_BINSTRING (Python 2 str) give kStr when the
//     bytes are UTF-8 (what torch.load's encoding="utf-8" does), else kBytes;
//   BINUNICODE and friends must be UTF-8 (surrogates allowed, as Python's
//     'surrogatepass'), else kCorrupt;
//   INT, LONG, LONG1, LONG4 give kInt when the value fits in int64, else
//     kBigInt with the shortest payload (at most 4300 decimal digits, as
//     Python's own int parsing);
//   INST and OBJ give kObject with ObjectOp::kInst and a tuple of the args;
//   APPEND(S)/SETITEM(S) onto an object fill ObjectData::list_items /
//     dict_items (OrderedDict is REDUCE(OrderedDict, ()) then SETITEMS);
//   PERSID gives kPersId of a kStr, BINPERSID of the value popped.
// Valid but refused with kUnsupported: EXT1/2/4 (the extension registry),
// NEXT_BUFFER/READONLY_BUFFER (out-of-band buffers), BUILD onto anything but
// an object or twice onto one, ADDITEMS onto an object, PROTO above 5, and
// payloads of 4 GiB or more.
//
// Stricter than CPython: STOP must leave exactly one value and no open MARK
// (pickletools.dis requires the same; Python's pickler never leaves more).
//
// Thread safety: Decode keeps no state between calls; a Decoded is a value.
#ifndef ZEROFOLD_PICKLE_DECODER_H_
#define ZEROFOLD_PICKLE_DECODER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pickle/graph.h"
#include "zerofold/result.h"

namespace zerofold::pickle {

struct DecodeLimits {
  // Open MARKs, and container nesting: a container is one deeper than the
  // deepest value put into it, measured as values are added (a graph linked
  // up later through the memo can be deeper, or cyclic: traversals guard
  // themselves). Raise with --max-pickle-depth.
  uint32_t max_depth = 1000;
  // Memo entries (BINPUT index + 1 for sparse indices). Raise with --max-pickle-memo.
  uint64_t max_memo = 1ull << 26;
  // Values on the stack at once. Raise with --max-pickle-stack.
  uint64_t max_stack = 1ull << 26;
  // Graph nodes created in total. Raise with --max-pickle-nodes.
  uint64_t max_nodes = 1ull << 28;
};

struct Decoded {
  Graph graph;
  NodeId root = kNoNode;
  // Bytes consumed through the STOP opcode.
  uint64_t consumed = 0;
  // "module.name" of each unsafe global, first-seen order, no repeats.
  std::vector<std::string> unsafe_globals;
  // Highest protocol seen in a PROTO opcode (0 when none).
  int protocol = 0;
};

// Decodes one pickle from the start of `bytes` up to its STOP opcode; bytes
// after STOP are left alone (Decoded::consumed tells where the pickle ended).
// `base_offset` is the absolute file offset of bytes[0]; errors carry the
// absolute offset of the failing opcode and name it ("BINUNICODE8 declares N
// bytes, M left"). Input that ends before STOP is kCorrupt with a message
// starting "truncated".
Result<Decoded> Decode(std::span<const std::byte> bytes, uint64_t base_offset,
                       const DecodeLimits& limits = {});

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_DECODER_H_
