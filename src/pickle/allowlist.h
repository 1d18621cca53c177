// The globals a pickle may name and still be safe to load (see safety.h).
#ifndef ZEROFOLD_PICKLE_ALLOWLIST_H_
#define ZEROFOLD_PICKLE_ALLOWLIST_H_

#include <string_view>

namespace zerofold::pickle {

// True when "module.name" (as Python imports it: after the protocol < 3
// name mapping) is on one of zerofold's two allowlists (allowlist.cc):
//   1. what torch.load(weights_only=True) allows by default at pytorch main
//      (commit 00f730b66e58, after 2.10; checked against torch 2.6.0's
//      _get_allowed_globals()): torch/_weights_only_unpickler.py's
//      _get_allowed_globals: collections.OrderedDict and Counter, torch.Size,
//      Tensor, device, nn.parameter.Parameter, serialization._get_layout,
//      _codecs.encode, builtins bytearray/set/complex, every dtype, the
//      legacy tensor and storage classes, the quantization schemes, the
//      torch._utils._rebuild_* functions and _tensor._rebuild_from_type_v2;
//   2. classes zerofold reads as plain data in the formats it reads and
//      merges (DeepSpeed, DCP metadata, Megatron, numpy arrays, DTensor),
//      each with what Python's or torch's reconstruction of it runs.
bool IsAllowedGlobal(std::string_view dotted);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_ALLOWLIST_H_
