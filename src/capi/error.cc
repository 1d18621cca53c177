#include "capi/error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace zerofold::capi {

namespace {

// The numbers are the contract of both enums; a change to either breaks the build.
static_assert(ZF_OK == static_cast<int>(Code::kOk));
static_assert(ZF_E_CORRUPT == static_cast<int>(Code::kCorrupt));
static_assert(ZF_E_UNSUPPORTED == static_cast<int>(Code::kUnsupported));
static_assert(ZF_E_UNSAFE == static_cast<int>(Code::kUnsafe));
static_assert(ZF_E_LIMIT == static_cast<int>(Code::kLimit));
static_assert(ZF_E_INVALID_ARGUMENT == static_cast<int>(Code::kInvalidArgument));
static_assert(ZF_E_NOT_FOUND == static_cast<int>(Code::kNotFound));
static_assert(ZF_E_IO == static_cast<int>(Code::kIO));
static_assert(ZF_E_INTERNAL == static_cast<int>(Code::kInternal));
static_assert(ZF_E_NOMEM == 9);
static_assert(ZF_CANCELLED == static_cast<int>(Code::kCancelled));
static_assert(ZF_E_AMBIGUOUS == static_cast<int>(Code::kAmbiguous));

// Copies `part1` then `part2` into dst[0, size), truncated to size - 1 bytes
// and NUL-terminated when size > 0. Returns the full length.
size_t CopyText(char* dst, size_t size, std::string_view part1, std::string_view part2 = {}) noexcept {
  const size_t full = part1.size() + part2.size();
  if (dst == nullptr || size == 0) return full;
  size_t at = 0;
  for (std::string_view part : {part1, part2}) {
    const size_t n = std::min(part.size(), size - 1 - at);
    if (n > 0) std::memcpy(dst + at, part.data(), n);
    at += n;
  }
  dst[at] = '\0';
  return full;
}

}  // namespace

zf_code ToCode(Code code) noexcept {
  switch (code) {
    case Code::kOk: return ZF_OK;
    case Code::kCorrupt: return ZF_E_CORRUPT;
    case Code::kUnsupported: return ZF_E_UNSUPPORTED;
    case Code::kUnsafe: return ZF_E_UNSAFE;
    case Code::kLimit: return ZF_E_LIMIT;
    case Code::kInvalidArgument: return ZF_E_INVALID_ARGUMENT;
    case Code::kNotFound: return ZF_E_NOT_FOUND;
    case Code::kIO: return ZF_E_IO;
    case Code::kInternal: return ZF_E_INTERNAL;
    case Code::kCancelled: return ZF_CANCELLED;
    case Code::kAmbiguous: return ZF_E_AMBIGUOUS;
  }
  return ZF_E_INTERNAL;
}

zf_code SetError(zf_error* err, const Status& status) noexcept {
  const zf_code code = ToCode(status.code());
  if (err == nullptr) return code;
  err->code = code;
  err->offset = status.offset();
  err->message_length = CopyText(err->message, err->message_size, status.message());
  err->path_length = CopyText(err->path, err->path_size, status.path());
  err->record_length = CopyText(err->record, err->record_size, status.record());
  return code;
}

zf_code SetError(zf_error* err, zf_code code, std::string_view part1, std::string_view part2) noexcept {
  if (err == nullptr) return code;
  err->code = code;
  err->offset = ZF_NO_OFFSET;
  err->message_length = CopyText(err->message, err->message_size, part1, part2);
  err->path_length = CopyText(err->path, err->path_size, {});
  err->record_length = CopyText(err->record, err->record_size, {});
  return code;
}

void HandOut(const std::string& text, char** out, size_t* length) {
  // malloc, so that zf_free (free) releases it; a document may be large.
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.data(), text.size() + 1);
  *out = copy;
  if (length != nullptr) *length = text.size();
}

}  // namespace zerofold::capi

extern "C" {

const char* zf_code_name(zf_code code) noexcept {
  const int n = static_cast<int>(code);
  if (n == ZF_E_NOMEM) return "out of memory";
  if (n != ZF_CANCELLED && n != ZF_E_AMBIGUOUS && (n < ZF_OK || n > ZF_E_INTERNAL)) return "unknown";
  // CodeName returns views of string literals, so data() is NUL-terminated.
  return zerofold::CodeName(static_cast<zerofold::Code>(n)).data();
}

}  // extern "C"
