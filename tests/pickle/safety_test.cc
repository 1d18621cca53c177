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

TEST_CASE("IsUnsafeGlobal flags what would run code and passes plain data") {
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
      {"builtins", "list", false},
      {"builtins", "set", false},
      {"builtins", "bytearray", false},
      {"__builtin__", "set", false},
      {"__builtin__", "bytes", false},
      {"builtins", "getattribute", false},
      {"collections", "OrderedDict", false},
      {"_codecs", "encode", false},
      {"copyreg", "_reconstructor", false},
      {"copy_reg", "_reconstructor", false},
      {"copyreg", "__newobj__", false},
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
      {"mymod", "Outer.Inner", false},
      {"ossify", "x", false},
      {"system", "os", false},
      {"torch.osx", "y", false},
      {"numpy", "loadtxt", false},
  };
  for (const GlobalCase& c : cases) {
    std::string global = std::string(c.module) + " " + c.name;
    CAPTURE(global);
    CHECK_EQ(IsUnsafeGlobal(c.module, c.name), c.unsafe);
  }
}

}  // namespace
}  // namespace zerofold::pickle
