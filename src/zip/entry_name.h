// Which entry names zerofold accepts: names are used as record keys and may
// become paths when a user extracts, so they must be canonical relative
// paths.
#ifndef ZEROFOLD_ZIP_ENTRY_NAME_H_
#define ZEROFOLD_ZIP_ENTRY_NAME_H_

#include <string_view>

#include "zerofold/status.h"

namespace zerofold::zip {

// OK when `name` is a canonical relative path: not empty, no leading '/',
// no '\\' (a DOS separator), no control character (NUL, newline, ...:
// names appear in one-line error messages), and no empty, "." or ".."
// component (a single trailing '/' marks a folder entry and is allowed).
// Otherwise kCorrupt naming the rule; the caller adds record and offset.
Status CheckEntryName(std::string_view name);

// The first path component ("archive" for "archive/data.pkl"), or empty
// when the name has no '/'.
std::string_view TopFolder(std::string_view name);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_ENTRY_NAME_H_
