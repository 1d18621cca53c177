// I/O failures injected through the Source/Sink seam surface as kIO, and
// the readers and the writer stop at them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem.h"
#include "test_util.h"
#include "zip/archive.h"
#include "zip/entry_source.h"
#include "zip/stream_reader.h"
#include "zip/writer.h"

namespace zerofold::zip {
namespace {

TEST_CASE("a failed read at any point of ReadArchive, LocateEntry and ReadEntry is kIO") {
  const testing::SmallArchive s = testing::BuildSmall();
  io::MemSource mem("small.pt", s.bytes);
  testing::FailingSource counter(&mem, UINT64_MAX);
  REQUIRE(testing::ReadLocatedArchive(counter).ok());
  const uint64_t reads = counter.reads();
  CHECK_GE(reads, 2 + s.names.size());  // end records, central directory, each local header
  for (uint64_t n = 0; n < reads; ++n) {
    CAPTURE(n);
    testing::FailingSource failing(&mem, n);
    Status st = testing::ReadLocatedArchive(failing).status();
    CHECK_EQ(st.code(), Code::kIO);
    CHECK_EQ(st.path(), "small.pt");
  }
  const Archive a = ReadArchive(mem).value();
  testing::FailingSource failing(&mem, 0);
  Status st = ReadEntry(failing, a.entries[1], 1000).status();
  CHECK_EQ(st.code(), Code::kIO);
  CHECK_EQ(st.record(), "arch/data/0");
}

TEST_CASE("a full disk stops the writer at the first failed append, for good") {
  const testing::SmallArchive s = testing::BuildSmall();
  const std::vector<std::byte> payload(100, std::byte{7});
  for (uint64_t capacity : {uint64_t{0}, uint64_t{50}, uint64_t{200}, s.cd_offset, s.bytes.size() - 1}) {
    CAPTURE(capacity);
    testing::FullSink sink(capacity);
    Writer w(&sink);
    Status first;
    for (int i = 0; i < 4 && first.ok(); ++i) first = w.AddEntry("arch/e" + std::to_string(i), payload);
    if (first.ok()) first = w.Finish();
    REQUIRE_EQ(first.code(), Code::kIO);
    CHECK_EQ(first.path(), "out.pt");
    CHECK_EQ(w.Finish().code(), Code::kIO);
    CHECK_EQ(w.AddEntry("arch/later", payload).code(), Code::kIO);
  }
}

TEST_CASE("a failed stream read is kIO and sticks") {
  const testing::SmallArchive s = testing::BuildSmall();
  io::MemSource mem("small.pt", s.bytes);
  for (uint64_t n = 0; n < 6; ++n) {
    CAPTURE(n);
    testing::FailingSource failing(&mem, n);
    testing::RandomStream stream(&failing, 40);
    StreamReader r(&stream);
    Status st = [&]() -> Status {
      while (true) {
        ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
        if (e == nullptr) return r.Finish();
      }
    }();
    CHECK_EQ(st.code(), Code::kIO);
    CHECK_EQ(r.Next().status().code(), Code::kIO);
  }
}

}  // namespace
}  // namespace zerofold::zip
