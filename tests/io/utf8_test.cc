#include "io/utf8.h"

#include <doctest/doctest.h>

namespace zerofold::io {
namespace {

TEST_CASE("utf8 validation follows RFC 3629") {
  CHECK_EQ(FirstInvalidUtf8("plain"), kValidUtf8);
  CHECK_EQ(FirstInvalidUtf8("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
           kValidUtf8);
  CHECK_EQ(FirstInvalidUtf8("ab\x80"), 2u);          // lone continuation
  CHECK_EQ(FirstInvalidUtf8("\xc1\xbf"), 0u);        // overlong 2-byte
  CHECK_EQ(FirstInvalidUtf8("\xe0\x9f\xbf"), 0u);    // overlong 3-byte
  CHECK_EQ(FirstInvalidUtf8("\xed\xbf\xbf"), 0u);    // surrogate
  CHECK_EQ(FirstInvalidUtf8("\xf0\x8f\xbf\xbf"), 0u);  // overlong 4-byte
  CHECK_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  CHECK_EQ(FirstInvalidUtf8("x\xf5\x80\x80\x80"), 1u);
  CHECK_EQ(FirstInvalidUtf8("x\xe2\x82"), 1u);       // truncated
}

}  // namespace
}  // namespace zerofold::io
