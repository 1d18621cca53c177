#include "capi/error.h"

#include <doctest/doctest.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace zerofold::capi {
namespace {

// A zf_error with 16-byte buffers, filled with junk first.
struct Buffers {
  zf_error e;
  char message[16];
  char path[16];
  char record[16];
  Buffers() {
    std::memset(this, 0x5a, sizeof *this);
    e.message = message;
    e.message_size = sizeof message;
    e.path = path;
    e.path_size = sizeof path;
    e.record = record;
    e.record_size = sizeof record;
  }
};

TEST_CASE("every Status code maps to the zf_code of the same number") {
  const Code codes[] = {Code::kOk,    Code::kCorrupt,         Code::kUnsupported, Code::kUnsafe, Code::kLimit,
                        Code::kInvalidArgument, Code::kNotFound, Code::kIO,          Code::kInternal, Code::kCancelled, Code::kAmbiguous};
  for (Code c : codes) {
    CAPTURE(static_cast<int>(c));
    CHECK_EQ(static_cast<int>(ToCode(c)), static_cast<int>(c));
    CHECK_EQ(std::string(zf_code_name(ToCode(c))), std::string(CodeName(c)));
  }
}

TEST_CASE("Guard turns exceptions into codes without allocating") {
  Buffers b;
  CHECK_EQ(Guard(&b.e, []() -> Status { throw std::bad_alloc(); }), ZF_E_NOMEM);
  CHECK_EQ(b.e.code, ZF_E_NOMEM);
  CHECK_EQ(std::string(b.message), "out of memory");
  CHECK_EQ(std::string(b.path), "");
  CHECK_EQ(b.e.offset, ZF_NO_OFFSET);

  CHECK_EQ(Guard(&b.e, []() -> Status { throw std::runtime_error("boom"); }), ZF_E_INTERNAL);
  CHECK_EQ(std::string(b.message), "C++ exception i");  // truncated to 15 bytes
  CHECK_EQ(b.e.message_length, std::strlen("C++ exception inside zerofold: boom"));

  CHECK_EQ(Guard(&b.e, []() -> Status { throw 42; }), ZF_E_INTERNAL);
  CHECK_EQ(b.e.message_length, std::strlen("C++ exception of unknown type inside zerofold"));

  CHECK_EQ(Guard(nullptr, []() -> Status { throw std::bad_alloc(); }), ZF_E_NOMEM);
}

TEST_CASE("Guard copies a Status's fields, truncated and NUL-terminated") {
  Buffers b;
  zf_code code = Guard(&b.e, []() -> Status {
    return Status::Corrupt("a message longer than sixteen").WithPath("p.pt").WithRecord("archive/data.pkl").WithOffset(77);
  });
  CHECK_EQ(code, ZF_E_CORRUPT);
  CHECK_EQ(b.e.offset, 77u);
  CHECK_EQ(std::string(b.message), "a message longe");
  CHECK_EQ(b.e.message_length, 29u);
  CHECK_EQ(std::string(b.path), "p.pt");
  CHECK_EQ(b.e.path_length, 4u);
  CHECK_EQ(std::string(b.record), "archive/data.pk");
  CHECK_EQ(b.e.record_length, 16u);

  // OK clears every field.
  CHECK_EQ(Guard(&b.e, [] { return Status::OK(); }), ZF_OK);
  CHECK_EQ(b.e.offset, ZF_NO_OFFSET);
  CHECK_EQ(std::string(b.message), "");
  CHECK_EQ(b.e.message_length + b.e.path_length + b.e.record_length, 0u);
}

}  // namespace
}  // namespace zerofold::capi
