// The C API's error plumbing: Status codes to zf_code, filling a caller's
// zf_error, and the guard every entry point runs its body in, so no C++
// exception ever crosses the C boundary.
#ifndef ZEROFOLD_CAPI_ERROR_H_
#define ZEROFOLD_CAPI_ERROR_H_

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "zerofold/status.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

// The pinned C value of a Status code (equal numbers; see zerofold.h).
zf_code ToCode(Code code) noexcept;

// Fills `err` (may be null) from `status`, OK included, and returns its code.
// Copies into the caller's buffers only: never allocates, never throws.
zf_code SetError(zf_error* err, const Status& status) noexcept;

// Fills `err` (may be null) with `code`, no path, record or offset, and the
// message `part1` followed by `part2`. Never allocates: safe after bad_alloc.
zf_code SetError(zf_error* err, zf_code code, std::string_view part1, std::string_view part2 = {}) noexcept;

// Runs `body` (returning a Status) and fills `err` from what it returns or
// throws: bad_alloc is ZF_E_NOMEM, any other exception ZF_E_INTERNAL.
template <typename Body>
zf_code Guard(zf_error* err, Body&& body) noexcept {
  try {
    return SetError(err, body());
  } catch (const std::bad_alloc&) {
    return SetError(err, ZF_E_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return SetError(err, ZF_E_INTERNAL, "C++ exception inside zerofold: ", e.what());
  } catch (...) {
    return SetError(err, ZF_E_INTERNAL, "C++ exception of unknown type inside zerofold");
  }
}

// Hands `text` out to the caller: a malloc'ed NUL-terminated copy (released
// with zf_free) at *out, its length at *length unless NULL. Throws
// std::bad_alloc (Guard makes it ZF_E_NOMEM).
void HandOut(const std::string& text, char** out, size_t* length);

}  // namespace zerofold::capi

#endif  // ZEROFOLD_CAPI_ERROR_H_
