// Which pickle globals would run code if a real unpickler loaded the file.
#ifndef ZEROFOLD_PICKLE_SAFETY_H_
#define ZEROFOLD_PICKLE_SAFETY_H_

#include <string_view>

namespace zerofold::pickle {

// True for globals that execute code, touch the system, or load nested
// pickles or code. safety.cc holds the list, with the reason for each group:
//   whole modules: os, posix, nt, subprocess, sys, runpy, socket, shutil,
//     importlib, ctypes, pty, code, marshal, pickle, _pickle, cPickle, dill,
//     multiprocessing, asyncio, ... (submodules included);
//   single names: builtins/__builtin__ eval, exec, compile, open, file,
//     __import__, getattr, setattr, delattr, globals, locals, vars, input,
//     breakpoint, apply, execfile, reload, ...; operator.attrgetter and
//     methodcaller; types.CodeType/FunctionType; torch.load, torch.save,
//     torch.serialization (but _get_layout, how torch.layout pickles),
//     torch.storage._load_from_bytes, torch.jit, torch._C._jit*, torch.hub,
//     torch.fx.graph_module.reduce_*; numpy.load (numpy's _reconstruct and
//     dtype are plain data); pandas.read_pickle; yaml.load and friends.
// A dotted name (protocol 4 resolves it attribute by attribute) is unsafe
// when any step is a dunder or any suffix names an unsafe global ("torch" +
// "os.system"). builtins.getattr is unsafe here; the decoder lets through
// the one use Python >= 3.11 makes of it for Enum members (see decoder.h).
bool IsUnsafeGlobal(std::string_view module, std::string_view name);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_SAFETY_H_
