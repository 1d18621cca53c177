#include "pickle/safety.h"

#include <doctest/doctest.h>

#include <string>

namespace zerofold::pickle {
namespace {

struct GlobalCase {
  const char* module;
  const char* name;
  bool unsafe;
};

TEST_CASE("IsUnsafeGlobal flags what would run code and passes plain data (protocol 2)") {
  const GlobalCase cases[] = {
      // processes and the system
      {"os", "system", true},
      {"os.path", "join", true},
      {"posix", "system", true},
      {"nt", "system", true},
      {"subprocess", "Popen", true},
      {"sys", "exit", true},
      {"socket", "socket", true},
      {"shutil", "rmtree", true},
      {"pty", "spawn", true},
      // code
      {"runpy", "_run_code", true},
      {"importlib", "import_module", true},
      {"importlib.util", "spec_from_file_location", true},
      {"ctypes", "CDLL", true},
      {"code", "interact", true},
      {"marshal", "loads", true},
      {"types", "CodeType", true},
      {"types", "FunctionType", true},
      {"operator", "attrgetter", true},
      {"operator", "methodcaller", true},
      // builtins under both names
      {"builtins", "eval", true},
      {"builtins", "exec", true},
      {"builtins", "compile", true},
      {"builtins", "open", true},
      {"builtins", "__import__", true},
      {"builtins", "getattr", true},
      {"builtins", "setattr", true},
      {"builtins", "delattr", true},
      {"builtins", "globals", true},
      {"builtins", "vars", true},
      {"builtins", "input", true},
      {"builtins", "breakpoint", true},
      {"__builtin__", "eval", true},
      {"__builtin__", "apply", true},
      {"__builtin__", "execfile", true},
      {"__builtin__", "file", true},
      {"__builtin__", "reload", true},
      {"__builtin__", "getattr", true},
      // nested pickle loaders
      {"pickle", "loads", true},
      {"_pickle", "loads", true},
      {"cPickle", "loads", true},
      {"dill", "loads", true},
      {"torch", "load", true},
      {"torch.serialization", "load", true},
      {"torch.serialization", "_legacy_load", true},
      {"torch.storage", "_load_from_bytes", true},
      {"torch.jit", "load", true},
      {"torch._C", "_jit_pass_lint", true},
      {"torch._C._jit_tree_views", "SourceRange", true},
      {"torch.hub", "load", true},
      {"torch.fx.graph_module", "reduce_graph_module", true},
      {"torch.fx.graph_module", "reduce_package_graph_module", true},
      {"numpy", "load", true},
      {"numpy.testing._private.utils", "runstring", true},
      {"pandas", "read_pickle", true},
      {"yaml", "unsafe_load", true},
      // dotted names resolve attribute by attribute
      {"torch", "os.system", true},
      {"torch", "serialization.load", true},
      {"mymod", "Cls.__init__", true},
      {"mymod", "f.__globals__", true},
      {"builtins", "__import__.x", true},
      // plain data
      {"builtins", "set", false},
      {"builtins", "bytearray", false},
      {"__builtin__", "set", false},
      {"__builtin__", "bytes", false},
      {"collections", "OrderedDict", false},
      {"_codecs", "encode", false},
      {"torch._utils", "_rebuild_tensor_v2", false},
      {"torch._utils", "_rebuild_parameter", false},
      {"torch", "FloatStorage", false},
      {"torch", "Size", false},
      {"torch", "float16", false},
      {"torch.serialization", "_get_layout", false},
      {"numpy.core.multiarray", "_reconstruct", false},
      {"numpy", "ndarray", false},
      {"numpy", "dtype", false},
      {"deepspeed.runtime.zero.config", "ZeroStageEnum", false},
      {"argparse", "Namespace", false},
      {"torch", "float8_e8m0fnu", false},
      {"torch", "float4_e2m1fn_x2", false},
      {"torch", "uint3", false},
      {"torch.nn.parameter", "Parameter", false},
      {"torch._tensor", "_rebuild_from_type_v2", false},
      {"torch", "per_channel_affine", false},
      {"torch.cuda.sparse", "FloatTensor", false},
      {"collections", "Counter", false},
      {"builtins", "complex", false},
      {"signal", "Signals", false},
      {"pathlib", "PosixPath", false},
      {"torch.distributed.checkpoint.metadata", "TensorStorageMetadata", false},
      {"torch.distributed.tensor", "DTensor", false},
      {"numpy._core.multiarray", "scalar", false},
  };
  for (const GlobalCase& c : cases) {
    std::string global = std::string(c.module) + " " + c.name;
    CAPTURE(global);
    CHECK_EQ(IsUnsafeGlobal(c.module, c.name, 2), c.unsafe);
  }
}

struct ReasonCase {
  const char* module;
  const char* name;
  int protocol;
  const char* reason;  // UnsafeReason of "module.name"
};

// The allowlist verdict (issue 27): names the old denylist passed are unsafe
// now, each with the reason inspect prints. Sources: the 2025-2026
// picklescan/modelscan bypasses named in issue 27, Python's _compat_pickle.
TEST_CASE("IsUnsafeGlobal: everything off the allowlists is unsafe, with a reason") {
  const ReasonCase cases[] = {
      // published bypasses of denylist scanners
      {"torch.utils.collect_env", "run", 2, "runs code: processes and the operating system"},
      {"torch.utils.bottleneck.__main__", "run_cprofile", 2,
       "runs code: torch loaders, TorchScript, downloads and compilers"},
      {"torch.utils.data.datapipes.utils.decoder", "basichandlers", 2,
       "runs code: loads nested pickles or serialized code"},
      {"torch.utils.model_zoo", "load_url", 2, "runs code: torch loaders, TorchScript, downloads and compilers"},
      {"pip", "main", 2, "runs code: processes and the operating system"},
      {"uuid", "_get_command_stdout", 2, "runs code: processes and the operating system"},
      {"builtins", "map", 2, "runs code: calls a callable or attribute the pickle names"},
      {"torch", "os", 2, "runs code: processes and the operating system"},
      {"pkgutil", "resolve_name", 4, "runs code: running or compiling code"},
      // Python's protocol < 3 renaming: judged as what Python imports
      {"urllib", "urlretrieve", 2,
       "runs code: files and the network (protocol < 3 imports it as urllib.request.urlretrieve)"},
      {"commands", "getoutput", 0,
       "runs code: processes and the operating system (protocol < 3 imports it as subprocess.getoutput)"},
      {"__builtin__", "eval", 2, "runs code: running or compiling code (protocol < 3 imports it as builtins.eval)"},
      // formerly passed as plain data: on no allowlist now
      {"builtins", "list", 2, "not on an allowlist"},
      {"builtins", "getattribute", 2, "not on an allowlist"},
      {"copyreg", "_reconstructor", 2, "runs code: calls a callable or attribute the pickle names"},
      {"copy_reg", "_reconstructor", 2,
       "runs code: calls a callable or attribute the pickle names (protocol < 3 imports it as copyreg._reconstructor)"},
      {"mymod", "Outer.Inner", 4, "not on an allowlist"},
      {"ossify", "x", 2, "not on an allowlist"},
      {"system", "os", 2, "runs code: processes and the operating system"},
      {"torch.osx", "y", 2, "not on an allowlist"},
      {"numpy", "loadtxt", 2, "not on an allowlist"},
      {"__main__", "Point", 2, "not on an allowlist"},
      {"mymod", "f.__globals__", 4, "runs code: reaches an object's internals"},
      // an allowed name spelled the Python 2 way under protocol 4 does not
      // import in Python 3: not on an allowlist as written
      {"__builtin__", "set", 4, "not on an allowlist (protocol < 3 imports it as builtins.set)"},
      // torch 2.6 allows it, pytorch main no longer does
      {"torch._utils", "_rebuild_nested_tensor", 2, "not on an allowlist"},
  };
  for (const ReasonCase& c : cases) {
    std::string global = std::string(c.module) + "." + c.name;
    CAPTURE(global);
    CHECK(IsUnsafeGlobal(c.module, c.name, c.protocol));
    CHECK_EQ(UnsafeReason(global), c.reason);
  }
  // The renaming applies below protocol 3 only.
  CHECK_FALSE(IsUnsafeGlobal("__builtin__", "set", 2));
  CHECK_FALSE(IsUnsafeGlobal("__builtin__", "set", 0));
  CHECK(IsUnsafeGlobal("__builtin__", "set", 3));
  CHECK(IsUnsafeGlobal("copy_reg", "_reconstructor", 3));
  CHECK(IsUnsafeGlobal("", "set", 2));
}

}  // namespace
}  // namespace zerofold::pickle
