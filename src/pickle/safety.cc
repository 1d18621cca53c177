#include "pickle/safety.h"

#include <string>

#include "pickle/allowlist.h"
#include "pickle/compat_names.h"

namespace zerofold::pickle {

namespace {

// The denylist names reasons only: the verdict is the allowlist. Each entry
// covers itself and every attribute or submodule below it ("os" covers
// "os.path.join"); names are as Python 3 imports them.
constexpr std::string_view kProcesses = "processes and the operating system";
constexpr std::string_view kCode = "running or compiling code";
constexpr std::string_view kNested = "loads nested pickles or serialized code";
constexpr std::string_view kFiles = "files and the network";
constexpr std::string_view kCallable = "calls a callable or attribute the pickle names";
constexpr std::string_view kTorch = "torch loaders, TorchScript, downloads and compilers";

struct Denied {
  std::string_view path;
  std::string_view group;
};

constexpr Denied kDenied[] = {
    {"os", kProcesses}, {"posix", kProcesses}, {"nt", kProcesses}, {"posixpath", kProcesses},
    {"ntpath", kProcesses}, {"subprocess", kProcesses}, {"_posixsubprocess", kProcesses},
    {"pty", kProcesses}, {"sys", kProcesses}, {"signal", kProcesses}, {"_thread", kProcesses},
    {"thread", kProcesses}, {"threading", kProcesses}, {"multiprocessing", kProcesses},
    {"_multiprocessing", kProcesses}, {"asyncio", kProcesses}, {"atexit", kProcesses},
    {"commands", kProcesses}, {"popen2", kProcesses}, {"_winapi", kProcesses}, {"msvcrt", kProcesses},
    {"winreg", kProcesses}, {"_winreg", kProcesses}, {"builtins.exit", kProcesses},
    {"builtins.quit", kProcesses},
    // uuid's helper runs a program, pip
    // installs packages (runs their setup code), torch.utils.collect_env
    // runs programs to describe the system.
    {"uuid._get_command_stdout", kProcesses}, {"uuid._popen", kProcesses}, {"pip", kProcesses},
    {"_pip", kProcesses}, {"torch.utils.collect_env", kProcesses},
    {"runpy", kCode}, {"code", kCode}, {"codeop", kCode}, {"timeit", kCode}, {"trace", kCode},
    {"profile", kCode}, {"cProfile", kCode}, {"pdb", kCode}, {"bdb", kCode}, {"importlib", kCode},
    {"imp", kCode}, {"pkgutil", kCode}, {"zipimport", kCode}, {"site", kCode}, {"pydoc", kCode},
    {"ctypes", kCode}, {"_ctypes", kCode}, {"cffi", kCode}, {"distutils", kCode},
    {"setuptools", kCode}, {"builtins.eval", kCode}, {"builtins.exec", kCode},
    {"builtins.execfile", kCode}, {"builtins.compile", kCode}, {"builtins.__import__", kCode},
    {"builtins.globals", kCode}, {"builtins.locals", kCode}, {"builtins.vars", kCode},
    {"builtins.input", kCode}, {"builtins.raw_input", kCode}, {"builtins.breakpoint", kCode},
    {"builtins.help", kCode}, {"builtins.reload", kCode}, {"types.CodeType", kCode},
    {"types.FunctionType", kCode}, {"types.LambdaType", kCode}, {"types.new_class", kCode},
    {"numpy.testing._private.utils.runstring", kCode}, {"numpy.ctypeslib", kCode},
    {"numpy.f2py", kCode}, {"numpy.distutils", kCode},
    {"marshal", kNested}, {"pickle", kNested}, {"_pickle", kNested}, {"cPickle", kNested},
    {"pickletools", kNested}, {"shelve", kNested}, {"dill", kNested}, {"cloudpickle", kNested},
    {"joblib", kNested}, {"numpy.load", kNested}, {"numpy.lib.npyio.load", kNested},
    {"pandas.read_pickle", kNested}, {"pandas.io.pickle.read_pickle", kNested},
    {"yaml.load", kNested}, {"yaml.load_all", kNested}, {"yaml.unsafe_load", kNested},
    {"yaml.unsafe_load_all", kNested}, {"yaml.full_load", kNested}, {"yaml.full_load_all", kNested},
    // datapipes' decoder handlers (basichandlers) unpickle their input.
    {"torch.utils.data.datapipes.utils.decoder", kNested},
    {"shutil", kFiles}, {"socket", kFiles}, {"_socket", kFiles}, {"webbrowser", kFiles},
    {"urllib.request", kFiles}, {"urllib2", kFiles}, {"httplib", kFiles}, {"http.client", kFiles},
    {"http.server", kFiles}, {"ftplib", kFiles}, {"smtplib", kFiles}, {"telnetlib", kFiles},
    {"requests", kFiles}, {"tempfile", kFiles}, {"glob", kFiles}, {"builtins.open", kFiles},
    {"builtins.file", kFiles}, {"io.open", kFiles}, {"io.FileIO", kFiles}, {"_io.open", kFiles},
    {"_io.FileIO", kFiles}, {"codecs.open", kFiles},
    {"builtins.getattr", kCallable}, {"builtins.setattr", kCallable},
    {"builtins.delattr", kCallable}, {"builtins.apply", kCallable}, {"builtins.map", kCallable},
    {"builtins.filter", kCallable}, {"builtins.sorted", kCallable}, {"builtins.max", kCallable},
    {"builtins.min", kCallable}, {"operator", kCallable}, {"_operator", kCallable},
    {"functools", kCallable}, {"itertools.starmap", kCallable}, {"copyreg", kCallable},
    {"torch.load", kTorch}, {"torch.save", kTorch}, {"torch.serialization", kTorch},
    {"torch.storage._load_from_bytes", kTorch}, {"torch.hub", kTorch}, {"torch.jit", kTorch},
    {"torch._C._jit", kTorch}, {"torch.utils.cpp_extension", kTorch}, {"torch.package", kTorch},
    {"torch.utils.model_zoo", kTorch}, {"torch.utils.bottleneck", kTorch},
    {"torch._dynamo", kTorch}, {"torch._inductor", kTorch}, {"torch.fx.graph_module", kTorch},
};

bool Matches(std::string_view path, std::string_view entry) {
  // path is entry itself, or an attribute below it ("torch.hub.load" under
  // "torch.hub"), or a longer name with entry as prefix ("torch._C._jit_pass"
  // under "torch._C._jit", which names a family of bindings).
  if (!path.starts_with(entry)) return false;
  if (path.size() == entry.size()) return true;
  char next = path[entry.size()];
  return next == '.' || (entry == "torch._C._jit" && next == '_');
}

std::string_view DeniedGroup(std::string_view path) {
  for (const Denied& d : kDenied)
    if (Matches(path, d.path)) return d.group;
  return {};
}

// The "module.name" Python imports: protocol < 3 renaming applied to the
// first split of `global` the tables know (their module keys are undotted
// but for "test.test_support").
std::string Imported(std::string_view global) {
  for (size_t dot = global.find('.'); dot != std::string_view::npos; dot = global.find('.', dot + 1)) {
    ImportedName n = MapPython2Name(global.substr(0, dot), global.substr(dot + 1));
    if (n.module != global.substr(0, dot) || n.name != global.substr(dot + 1)) return n.module + "." + n.name;
  }
  return std::string(global);
}

bool IsDunder(std::string_view step) { return step.size() > 4 && step.starts_with("__") && step.ends_with("__"); }

}  // namespace

bool IsUnsafeGlobal(std::string_view module, std::string_view name, int protocol) {
  std::string path;
  if (protocol < 3) {
    ImportedName n = MapPython2Name(module, name);
    path = n.module + "." + n.name;
  } else {
    path.append(module).append(".").append(name);
  }
  return module.empty() || name.empty() || !IsAllowedGlobal(path);
}

std::string UnsafeReason(std::string_view global) {
  std::string path = Imported(global);
  std::string_view group = DeniedGroup(path);
  // A dotted step can reach a denied module through another one
  // ("torch.os.system"), or an object's internals through a dunder.
  for (size_t dot = path.find('.'); group.empty() && dot != std::string::npos; dot = path.find('.', dot + 1)) {
    std::string_view rest = std::string_view(path).substr(dot + 1);
    group = DeniedGroup(rest);
    if (group.empty() && IsDunder(rest.substr(0, rest.find('.')))) group = "reaches an object's internals";
  }
  std::string reason = group.empty() ? "not on an allowlist" : "runs code: " + std::string(group);
  if (path != global) reason += " (protocol < 3 imports it as " + path + ")";
  return reason;
}

std::string DescribeUnsafe(const std::vector<std::string>& globals) {
  std::string text;
  for (const std::string& g : globals) text += (text.empty() ? "" : ", ") + g + " (" + UnsafeReason(g) + ")";
  return text;
}

Status RefuseUnsafe(const std::vector<std::string>& globals, std::string_view hint) {
  return Status::Unsafe("pickle references unsafe globals: " + DescribeUnsafe(globals) + " (" + std::string(hint) + ")");
}

}  // namespace zerofold::pickle
