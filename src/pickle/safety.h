// Which pickle globals are safe to load, and why the others are not.
#ifndef ZEROFOLD_PICKLE_SAFETY_H_
#define ZEROFOLD_PICKLE_SAFETY_H_

#include <string>
#include <string_view>
#include <vector>

#include "zerofold/status.h"

namespace zerofold::pickle {

// The verdict is an allowlist: a global is safe only when the name Python
// would import for it is on allowlist.h's lists (torch.load(weights_only=
// True)'s default globals at pytorch main, and the plain-data classes of the
// formats zerofold reads); everything else is unsafe. `protocol` is the
// pickle's protocol where the global appears (the last PROTO before it, 0
// when none): below 3, Python renames Python 2 names first (compat_names.h),
// so GLOBAL "__builtin__ set" is builtins.set and "urllib urlretrieve" is
// urllib.request.urlretrieve. A dotted name (protocol 4 resolves it
// attribute by attribute) is judged as the joined string, as torch's
// weights_only unpickler does: no allowlisted name has a dunder step, and
// "torch" + "os.system" is torch.os.system, on no list.
// builtins.getattr is unsafe here; the decoder lets through the one use
// Python >= 3.11 makes of it for Enum members (see decoder.h).
bool IsUnsafeGlobal(std::string_view module, std::string_view name, int protocol);

// Why a global Decoded::unsafe_globals lists ("module.name" as the pickle
// writes it) is unsafe, for people and for `zerofold scan`:
//   "runs code: <group>" when the denylist in safety.cc knows the name (or
//     a module it reaches through a dotted step, or a dunder step):
//     processes and the operating system; running or compiling code; nested
//     pickles or serialized code; files and the network; calls a callable
//     from the pickle; torch loaders, TorchScript and code from the hub; ...
//   "not on an allowlist" otherwise.
// When Python's protocol < 3 renaming changes the name, the reason ends with
// " (protocol < 3 imports it as <name>)".
std::string UnsafeReason(std::string_view global);

// "g1 (reason), g2 (reason)": unsafe globals as inspect and the refusals
// print them.
std::string DescribeUnsafe(const std::vector<std::string>& globals);

// The refusal of every writing command for an input whose pickle has unsafe
// globals (kUnsafe, exit 1): "pickle references unsafe globals: <Describe
// Unsafe> (<hint>)", where the hint says what --keep-unsafe does there.
Status RefuseUnsafe(const std::vector<std::string>& globals, std::string_view hint);
constexpr std::string_view kKeepCarries = "--keep-unsafe carries them through unexecuted";
constexpr std::string_view kKeepDrops = "--keep-unsafe writes the tensors anyway; the globals are not carried";

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_SAFETY_H_
