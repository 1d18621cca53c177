#include "zip/entry_name.h"

#include <string>

#include "zip/describe.h"

namespace zerofold::zip {

Status CheckEntryName(std::string_view name) {
  if (name.empty()) return Status::Corrupt("entry name is empty");
  if (name.front() == '/') return Status::Corrupt("entry name " + Quote(name) + " is an absolute path");
  if (name.find('\\') != std::string_view::npos)
    return Status::Corrupt("entry name " + Quote(name) + " contains a backslash");
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return Status::Corrupt("entry name " + Quote(name) + " contains a control character");
    }
  }
  size_t start = 0;
  while (start < name.size()) {
    size_t slash = name.find('/', start);
    size_t end = slash == std::string_view::npos ? name.size() : slash;
    std::string_view part(name.data() + start, end - start);
    if (part == "..") return Status::Corrupt("entry name " + Quote(name) + " escapes its folder (\"..\")");
    if (part == ".") return Status::Corrupt("entry name " + Quote(name) + " has a \".\" component");
    if (part.empty()) return Status::Corrupt("entry name " + Quote(name) + " has an empty component");
    if (slash == std::string_view::npos) break;
    start = slash + 1;  // a trailing '/' ends the loop: a folder entry
  }
  return Status::OK();
}

std::string_view TopFolder(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return {};
  return std::string_view(name.data(), slash);
}

}  // namespace zerofold::zip
