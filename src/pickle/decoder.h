// Pickle decoder, protocols 0-5, into a Graph. Nothing is imported or called.
//
// Globals are recorded as symbolic (module, name) nodes. Those that would
// run code if a real unpickler loaded the file (see safety.h) are listed in
// Decoded::unsafe_globals; decoding still succeeds, since we never call them.
// Hostile input fails fast with kCorrupt or kLimit: every declared length is
// checked against the bytes left before anything is allocated, and nesting,
// memo and stack sizes are capped by DecodeLimits.
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
  // Open MARKs plus container nesting. Raise with --max-pickle-depth.
  uint32_t max_depth = 1000;
  // Memo entries (BINPUT index + 1 for sparse indices). Raise with --max-pickle-memo.
  uint64_t max_memo = 1ull << 26;
  // Values on the stack at once.
  uint64_t max_stack = 1ull << 26;
  // Graph nodes created in total.
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
