#include "pickle/safety.h"

#include <string>

namespace zerofold::pickle {

namespace {

// Modules every global of which is unsafe: importing them and calling what
// they hold runs programs, touches files, processes, the network or the
// interpreter itself, or loads code. Submodules are included ("os" covers
// "os.path").
constexpr std::string_view kUnsafeModules[] = {
    // processes, the operating system, the interpreter
    "os", "posix", "nt", "posixpath", "ntpath", "subprocess", "_posixsubprocess", "pty", "sys",
    "signal", "_thread", "thread", "multiprocessing", "asyncio", "atexit", "commands", "popen2",
    "_winapi", "msvcrt", "winreg", "_winreg",
    // running or compiling code
    "runpy", "code", "codeop", "timeit", "trace", "profile", "cProfile", "pdb", "bdb",
    "importlib", "imp", "pkgutil", "zipimport", "site", "pydoc", "ctypes", "_ctypes", "cffi",
    // loaders of nested pickles or serialized code
    "marshal", "pickle", "_pickle", "cPickle", "pickletools", "shelve", "dill", "cloudpickle",
    "joblib",
    // files and the network
    "shutil", "socket", "_socket", "webbrowser", "urllib.request", "urllib2", "httplib",
    "http.client", "ftplib", "smtplib", "telnetlib", "requests",
    // build tools that compile and load code
    "distutils", "setuptools",
};

// Single globals (or attributes below them) that are unsafe in modules whose
// other names are plain data.
constexpr std::string_view kUnsafeNames[] = {
    // builtins (Python 3) and __builtin__ (Python 2, and what protocol <= 2
    // writes for builtins): code execution, imports, attribute access, files.
    "builtins.eval", "builtins.exec", "builtins.execfile", "builtins.compile", "builtins.open",
    "builtins.file", "builtins.__import__", "builtins.getattr", "builtins.setattr",
    "builtins.delattr", "builtins.globals", "builtins.locals", "builtins.vars", "builtins.input",
    "builtins.raw_input", "builtins.breakpoint", "builtins.apply", "builtins.reload",
    "builtins.help", "builtins.exit", "builtins.quit",
    // operator's callables apply any attribute or method to their argument.
    "operator.attrgetter", "operator.methodcaller", "_operator.attrgetter", "_operator.methodcaller",
    // code objects and functions built from pickled bytecode
    "types.CodeType", "types.FunctionType", "types.LambdaType", "types.new_class",
    // file openers
    "io.open", "io.FileIO", "_io.open", "_io.FileIO", "codecs.open",
    // loaders of nested pickles or code in data libraries
    "numpy.load", "numpy.lib.npyio.load", "numpy.testing._private.utils.runstring",
    "numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "pandas.read_pickle",
    "pandas.io.pickle.read_pickle", "yaml.load", "yaml.load_all", "yaml.unsafe_load",
    "yaml.unsafe_load_all", "yaml.full_load", "yaml.full_load_all",
    // torch: nested checkpoint loaders, TorchScript, code from the hub, C++
    // extensions, and fx GraphModules (whose reduce functions exec source
    // text from the pickle).
    "torch.load", "torch.save", "torch.serialization", "torch.storage._load_from_bytes", "torch.hub",
    "torch.jit", "torch._C._jit", "torch.utils.cpp_extension", "torch.package",
};

// Plain data under an unsafe entry: torch.layout pickles as
// torch.serialization._get_layout("torch.strided").
constexpr std::string_view kSafeExceptions[] = {"torch.serialization._get_layout"};

bool Matches(std::string_view path, std::string_view entry) {
  // path is entry itself, or an attribute below it ("torch.hub.load" under
  // "torch.hub"), or a longer name with entry as prefix ("torch._C._jit_pass"
  // under "torch._C._jit", which names a family of bindings).
  if (!path.starts_with(entry)) return false;
  if (path.size() == entry.size()) return true;
  char next = path[entry.size()];
  return next == '.' || (entry == "torch._C._jit" && next == '_');
}

bool UnsafePath(std::string_view path) {
  // Python 2's module name for builtins.
  std::string normalized;
  if (path.starts_with("__builtin__.")) {
    normalized = "builtins." + std::string(path.substr(12));
    path = normalized;
  }
  for (std::string_view e : kSafeExceptions)
    if (path == e) return false;
  for (std::string_view m : kUnsafeModules)
    if (Matches(path, m)) return true;
  for (std::string_view n : kUnsafeNames)
    if (Matches(path, n)) return true;
  // Every fx GraphModule reducer (reduce_graph_module,
  // reduce_package_graph_module, reduce_deploy_graph_module) execs source
  // text from the pickle.
  if (path.starts_with("torch.fx.graph_module.reduce_")) return true;
  return false;
}

}  // namespace

bool IsUnsafeGlobal(std::string_view module, std::string_view name) {
  std::string path;
  path.reserve(module.size() + 1 + name.size());
  path.append(module).append(".").append(name);
  if (UnsafePath(path)) return true;
  // Protocol 4 resolves a dotted name attribute by attribute, so any step may
  // reach a module by another name ("torch" + "os.system" is os.system) or a
  // dunder ("f.__globals__"): check the name from every dot, and refuse
  // dunder steps (qualified names of classes and functions have none).
  if (name.find('.') == std::string_view::npos) return false;
  if (name.starts_with("__") || UnsafePath(name)) return true;
  for (size_t dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    std::string_view rest = name.substr(dot + 1);
    if (rest.starts_with("__") || UnsafePath(rest)) return true;
  }
  return false;
}

}  // namespace zerofold::pickle
