#include "zip/writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "io/mem.h"
#include "test_util.h"
#include "zip/archive.h"
#include "zip/crc32.h"
#include "zip/entry_source.h"
#include "zip/torch_layout.h"

namespace zerofold::zip {
namespace {

using testing::ReadFileBytes;
using testing::TorchFixtures;

TEST_CASE("rewriting every torch-written fixture reproduces it byte for byte") {
  const std::vector<std::string> files = TorchFixtures();
  REQUIRE_GE(files.size(), 30u);
  for (const std::string& path : files) {
    CAPTURE(path);
    std::vector<std::byte> original = ReadFileBytes(path);
    io::MemSource src(path, original);
    Result<Archive> archive = ReadArchive(src);
    REQUIRE_MESSAGE(archive.ok(), archive.status().ToString());

    io::MemSink whole;
    io::MemSink chunked;
    Writer w1(&whole);
    Writer w2(&chunked);
    std::vector<std::pair<std::string, uint64_t>> plan;
    for (const Entry& e : archive->entries) {
      Result<std::vector<std::byte>> data = ReadEntry(src, e, 1 << 30);
      REQUIRE_MESSAGE(data.ok(), data.status().ToString());
      REQUIRE(w1.AddEntry(e.name, *data).ok());
      // The same entry streamed in 7-byte pieces.
      REQUIRE(w2.BeginEntry(e.name, e.size).ok());
      std::span<const std::byte> rest(*data);
      while (!rest.empty()) {
        const size_t n = std::min<size_t>(7, rest.size());
        REQUIRE(w2.Write(rest.first(n)).ok());
        rest = rest.subspan(n);
      }
      REQUIRE(w2.EndEntry().ok());
      plan.emplace_back(e.name, e.size);
    }
    REQUIRE(w1.Finish().ok());
    REQUIRE(w2.Finish().ok());
    CHECK(whole.bytes() == original);
    CHECK(chunked.bytes() == original);
    CHECK_EQ(w1.position(), original.size());
    CHECK_EQ(Writer::ArchiveSize(plan), original.size());
  }
}

TEST_CASE("the small torch fixture, with an empty storage, is reproduced") {
  const std::string path = testing::SourceRoot() + "/fixtures/zip/torch_small.pt";
  std::vector<std::byte> original = ReadFileBytes(path);
  io::MemSource src(path, original);
  Result<Archive> archive = ReadArchive(src);
  REQUIRE(archive.ok());
  io::MemSink out;
  Writer w(&out);
  bool saw_empty = false;
  for (const Entry& e : archive->entries) {
    saw_empty |= e.size == 0;
    REQUIRE(w.AddEntry(e.name, ReadEntry(src, e, 1 << 20).value()).ok());
  }
  REQUIRE(w.Finish().ok());
  CHECK(saw_empty);
  CHECK(out.bytes() == original);
}

// Writes fixtures/zip/torch_zip64.*'s entries again: one of 4.25 GiB (zeros,
// fed in 4 MiB pieces), then small ones past 4 GiB.
TEST_CASE("a torch archive past 4 GiB is reproduced byte for byte, zip64 forms included") {
  testing::TorchZip64Source src;
  REQUIRE(src.loaded());
  Result<Archive> archive = testing::ReadLocatedArchive(src);
  REQUIRE_MESSAGE(archive.ok(), archive.status().ToString());
  REQUIRE_EQ(archive->entries.size(), 5u);
  const Entry& big = archive->entries[1];
  CHECK_EQ(big.name, "torch_zip64/data/0");
  CHECK_EQ(big.size, (1ull << 32) + (1ull << 28));
  CHECK_EQ(big.data_offset, testing::TorchZip64Source::kZeroStart);
  CHECK_GT(archive->entries[2].header_offset, 0xFFFFFFFFull);

  testing::ComparingSink out(&src);
  Writer w(&out);
  std::vector<std::pair<std::string, uint64_t>> plan;
  std::vector<std::byte> zeros(4 << 20);
  for (const Entry& e : archive->entries) {
    plan.emplace_back(e.name, e.size);
    if (&e != &big) {
      REQUIRE(w.AddEntry(e.name, ReadEntry(src, e, 1 << 20).value()).ok());
      continue;
    }
    REQUIRE(w.BeginEntry(e.name, e.size).ok());
    for (uint64_t left = e.size; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
      REQUIRE(w.Write(std::span(zeros).first(n)).ok());
      left -= n;
    }
    REQUIRE(w.EndEntry().ok());
  }
  REQUIRE(w.Finish().ok());
  CHECK_EQ(out.mismatch(), UINT64_MAX);
  CHECK_EQ(out.position(), src.size());
  CHECK_EQ(Writer::ArchiveSize(plan), src.size());
  // The comparing sink does notice a wrong byte.
  testing::ComparingSink probe(&src);
  const std::byte wrong[2] = {std::byte{'P'}, std::byte{'L'}};
  REQUIRE(probe.Append(wrong).ok());
  CHECK_EQ(probe.mismatch(), 1u);
}

TEST_CASE("zip64 header encodings match torch's at the 4 GiB boundaries") {
  // The sizes and offsets where each form switches on (>= 0xFFFFFFFF).
  struct Case {
    const char* name;
    uint64_t offset;
    uint64_t size;
    bool size_zip64;
    bool offset_zip64;
    uint64_t descriptor;
    uint64_t central_extra;
  };
  const Case kCases[] = {
      {"small", 0, 10, false, false, 16, 0},
      {"size one below the marker", 0, 0xFFFFFFFEull, false, false, 16, 0},
      {"size at the marker", 0, 0xFFFFFFFFull, true, false, 24, 20},
      {"offset one below the marker", 0xFFFFFFFEull, 10, false, false, 16, 0},
      {"offset at the marker", 0xFFFFFFFFull, 10, false, true, 24, 12},
      {"both", 0x100000000ull, 0x100000000ull, true, true, 24, 28},
      {"empty past 4 GiB", 0x100000000ull, 0, false, true, 0, 12},
  };
  for (const Case& c : kCases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    const std::string name = "a/data/0";
    EntryLayout l = LayOutEntry(c.offset, name.size(), c.size);
    CHECK_EQ(l.size_zip64, c.size_zip64);
    CHECK_EQ(l.offset_zip64, c.offset_zip64);
    CHECK_EQ(l.data_offset() % kTorchDataAlignment, 0u);
    CHECK_EQ(l.descriptor_size(), c.descriptor);
    CHECK_EQ(l.central_header_size(), 46 + name.size() + c.central_extra);
    std::vector<std::byte> local, descriptor, central;
    AppendLocalHeader(l, name, &local);
    AppendDataDescriptor(l, 0x01020304, &descriptor);
    AppendCentralHeader(l, name, 0x01020304, &central);
    CHECK_EQ(local.size(), l.local_header_size());
    CHECK_EQ(descriptor.size(), l.descriptor_size());
    CHECK_EQ(central.size(), l.central_header_size());
  }
}

TEST_CASE("writer refuses misuse with kInvalidArgument") {
  io::MemSink sink;
  Writer w(&sink);
  const std::byte one[1] = {std::byte{1}};
  CHECK_EQ(w.Write(one).code(), Code::kInvalidArgument);
  CHECK_EQ(w.EndEntry().code(), Code::kInvalidArgument);
  CHECK_EQ(w.BeginEntry("../x").code(), Code::kInvalidArgument);
  CHECK_EQ(w.BeginEntry("/x").code(), Code::kInvalidArgument);
  CHECK_EQ(w.BeginEntry("a/").code(), Code::kInvalidArgument);
  CHECK_EQ(w.BeginEntry(std::string(70000, 'a')).code(), Code::kInvalidArgument);
  CHECK_EQ(sink.bytes().size(), 0u);
  REQUIRE(w.AddEntry("a/x", one).ok());
  Status dup = w.AddEntry("a/x", one);
  CHECK_EQ(dup.code(), Code::kInvalidArgument);
  CHECK_EQ(dup.record(), "a/x");
  REQUIRE(w.BeginEntry("a/y", 2).ok());
  CHECK_EQ(w.BeginEntry("a/z").code(), Code::kInvalidArgument);
  CHECK_EQ(w.Finish().code(), Code::kInvalidArgument);
  REQUIRE(w.Write(one).ok());
  Status short_entry = w.EndEntry();
  CHECK_EQ(short_entry.code(), Code::kInvalidArgument);
  CHECK_EQ(short_entry.message(), "entry declared 2 bytes but 1 were written");
  // The archive is now inconsistent: every later call repeats the error.
  CHECK_EQ(w.Finish().code(), Code::kInvalidArgument);
}

TEST_CASE("an entry without a declared size is written and read back") {
  io::MemSink sink;
  Writer w(&sink);
  const std::string text = "hello, zip";
  REQUIRE(w.BeginEntry("top/a").ok());
  REQUIRE(w.Write(io::AsBytes(text)).ok());
  REQUIRE(w.EndEntry().ok());
  REQUIRE(w.BeginEntry("top/empty").ok());
  REQUIRE(w.EndEntry().ok());
  REQUIRE(w.Finish().ok());
  Result<Archive> a = ReadArchiveBytes(sink.bytes());
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  REQUIRE_EQ(a->entries.size(), 2u);
  CHECK_EQ(a->top_folder, "top");
  io::MemSource src("mem", sink.bytes());
  std::vector<std::byte> data = ReadEntry(src, *a->Find("a"), 100).value();
  CHECK_EQ(io::AsChars(data), text);
  CHECK_EQ(a->Find("empty")->size, 0u);
  CHECK_EQ(a->entries[0].crc32, Crc32(0, io::AsBytes(text)));
}

TEST_CASE("an empty archive is just the end records") {
  io::MemSink sink;
  Writer w(&sink);
  REQUIRE(w.Finish().ok());
  CHECK_EQ(sink.bytes().size(), kTorchEndRecordsSize);
  CHECK_EQ(Writer::ArchiveSize({}), kTorchEndRecordsSize);
  Result<Archive> a = ReadArchiveBytes(sink.bytes());
  REQUIRE(a.ok());
  CHECK(a->entries.empty());
  CHECK_EQ(a->top_folder, "");
}

}  // namespace
}  // namespace zerofold::zip
