// The name Python 3 imports for a global a protocol 0-2 pickle names.
#ifndef ZEROFOLD_PICKLE_COMPAT_NAMES_H_
#define ZEROFOLD_PICKLE_COMPAT_NAMES_H_

#include <string>
#include <string_view>

namespace zerofold::pickle {

struct ImportedName {
  std::string module, name;
};

// Python's Unpickler.find_class, when the pickle's protocol is below 3 and
// fix_imports is on (torch.load's default, and pickle.load's), renames
// Python 2 names first by (module, name) pairs, then by module alone:
// GLOBAL "urllib urlretrieve" imports urllib.request.urlretrieve,
// "__builtin__ eval" builtins.eval, "commands getoutput" subprocess.getoutput.
// Names the tables do not hold come back unchanged.
ImportedName MapPython2Name(std::string_view module, std::string_view name);

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_COMPAT_NAMES_H_
