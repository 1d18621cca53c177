// Which pickle globals would run code if a real unpickler loaded the file.
#ifndef ZEROFOLD_PICKLE_SAFETY_H_
#define ZEROFOLD_PICKLE_SAFETY_H_

#include <string_view>

namespace zerofold::pickle {

// True for globals that execute code, touch the system, or load nested
// pickles: anything in os, posix, nt, subprocess, sys, runpy, socket, shutil,
// builtins/__builtin__ eval, exec, compile, open, __import__, getattr, ...;
// torch.serialization.load, torch.storage._load_from_bytes, pickle.loads, ...
// (getattr used as Python >= 3.11 pickles an Enum member, REDUCE of getattr
// on (a global, a str), is judged by the decoder, not here.)
bool IsUnsafeGlobal(std::string_view module, std::string_view name);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_SAFETY_H_
