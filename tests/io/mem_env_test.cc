#include "io/mem_env.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/fault_env.h"

namespace zerofold::io {
namespace {

std::vector<std::byte> B(std::string_view s) {
  std::span<const std::byte> b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return std::vector<std::byte>(b.begin(), b.end());
}

std::string Read(const RandomSource& src) {
  std::string out(static_cast<size_t>(src.size()), '\0');
  REQUIRE(ReadExactAt(src, 0, std::as_writable_bytes(std::span<char>(out.data(), out.size()))).ok());
  return out;
}

TEST_CASE("MemEnv normalizes paths") {
  CHECK_EQ(MemEnv::Normalize("a//b/"), "a/b");
  CHECK_EQ(MemEnv::Normalize("./a/./b"), "a/b");
  CHECK_EQ(MemEnv::Normalize(""), ".");
  CHECK_EQ(MemEnv::Normalize("/x//"), "/x");
  CHECK_EQ(MemEnv::Parent("a/b/c"), "a/b");
  CHECK_EQ(MemEnv::Parent("c"), ".");
  CHECK_EQ(MemEnv::Parent("/c"), "/");
}

TEST_CASE("MemEnv files, folders and errors") {
  MemEnv env;
  env.SetFile("d/e/f.txt", "hello");
  CHECK(env.IsDirectory("d"));
  CHECK(env.IsDirectory("d/e/"));
  CHECK(env.FileExists("d/e/f.txt"));
  CHECK_FALSE(env.IsDirectory("d/e/f.txt"));
  CHECK_EQ(env.ReadSmallFile("d/e/f.txt", 5).value(), "hello");
  CHECK_EQ(env.ReadSmallFile("d/e/f.txt", 4).status().code(), Code::kLimit);

  Status missing = env.OpenRandom("d/nope").status();
  CHECK_EQ(missing.code(), Code::kNotFound);
  CHECK_EQ(missing.ToString(), "d/nope: not found: open: No such file or directory");
  CHECK_EQ(env.OpenRandom("d").status().code(), Code::kInvalidArgument);
  CHECK_EQ(env.NewAtomicFile("nodir/x").status().code(), Code::kNotFound);
  CHECK_EQ(env.CreateDirs("d/e/f.txt/g").code(), Code::kIO);

  REQUIRE(env.CreateDirs("d/g/h").ok());
  std::vector<DirEntry> entries = env.ListDir("d").value();
  REQUIRE_EQ(entries.size(), 2u);
  CHECK_EQ(entries[0].name, "e");
  CHECK(entries[0].is_dir);
  CHECK_EQ(entries[1].name, "g");
  std::vector<DirEntry> files = env.ListDir("d/e").value();
  REQUIRE_EQ(files.size(), 1u);
  CHECK_EQ(files[0].name, "f.txt");
  CHECK_FALSE(files[0].is_dir);
  CHECK_EQ(env.ListDir("d/e/f.txt").status().code(), Code::kIO);
  CHECK_EQ(env.ListDir("zz").status().code(), Code::kNotFound);

  REQUIRE(env.RemoveFile("d/e/f.txt").ok());
  CHECK_EQ(env.RemoveFile("d/e/f.txt").code(), Code::kNotFound);
}

TEST_CASE("MemEnv file ids: one per file and folder, shared by a link, new on replace") {
  MemEnv env;
  env.SetFile("d/a.pt", "a");
  env.SetFile("d/b.pt", "b");
  const FileId a = env.GetFileId("d/a.pt").value();
  CHECK_EQ(a, (FileId{0, env.FileId("d/a.pt")}));
  CHECK_EQ(env.GetFileId("./d//a.pt").value(), a);
  CHECK_FALSE(env.GetFileId("d/b.pt").value() == a);
  // Folders: stable ids of their own, whatever the spelling.
  const FileId d = env.GetFileId("d").value();
  CHECK_EQ(env.GetFileId("./d/").value(), d);
  CHECK_FALSE(d == a);
  CHECK_FALSE(env.GetFileId(".").value() == d);
  CHECK_EQ(env.GetFileId(".").value(), env.GetFileId("").value());
  Status missing = env.GetFileId("d/nope").status();
  CHECK_EQ(missing.code(), Code::kNotFound);
  CHECK_EQ(missing.ToString(), "d/nope: not found: stat: No such file or directory");

  // A hard link: the same bytes and id, until one name gets a new file.
  REQUIRE(env.Link("d/a.pt", "e/link.pt"));
  CHECK_FALSE(env.Link("d/nope", "e/x"));
  CHECK_FALSE(env.FileExists("e/x"));
  CHECK_EQ(env.GetFileId("e/link.pt").value(), a);
  CHECK_EQ(Read(*env.OpenRandom("e/link.pt").value()), "a");
  env.SetFile("e/link.pt", "new");
  CHECK_FALSE(env.GetFileId("e/link.pt").value() == a);
  CHECK_EQ(env.GetFileId("d/a.pt").value(), a);
  CHECK_EQ(Read(*env.OpenRandom("d/a.pt").value()), "a");
}

TEST_CASE("SameFile: the same existing file or folder by any name") {
  MemEnv env;
  env.SetFile("d/a.pt", "a");
  env.SetFile("d/b.pt", "b");
  REQUIRE(env.Link("d/a.pt", "hard.pt"));
  struct Case {
    const char* a;
    const char* b;
    bool same;
  } cases[] = {
      {"d/a.pt", "d/a.pt", true},   {"d/a.pt", "./d/a.pt", true}, {"d/a.pt", "hard.pt", true},
      {"d/", "./d", true},          {"d/a.pt", "d/b.pt", false},  {"d/a.pt", "d", false},
      {"d/a.pt", "d/nope", false},  {"d/nope", "d/nope", false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    CHECK_EQ(SameFile(&env, c.a, c.b).value(), c.same);
    CHECK_EQ(SameFile(&env, c.b, c.a).value(), c.same);
  }
  FaultEnv fault(&env);  // forwards GetFileId
  CHECK(SameFile(&fault, "d/a.pt", "hard.pt").value());
}

TEST_CASE("MemEnv atomic files: a visible temp, renamed on commit, removed otherwise") {
  MemEnv env;
  env.SetFile("out/t.bin", "old");
  const uint64_t old_id = env.FileId("out/t.bin");
  std::unique_ptr<RandomSource> before = env.OpenRandom("out/t.bin").value();
  {
    std::unique_ptr<AtomicFileSink> sink = env.NewAtomicFile("out/t.bin").value();
    REQUIRE(sink->Append(B("new bytes")).ok());
    CHECK_EQ(sink->position(), 9u);
    CHECK_EQ(env.Files(), std::vector<std::string>{"out/.t.bin.zerofold-tmp.00000000-00000000-1-1.000000000001", "out/t.bin"});
    CHECK_EQ(env.GetFile("out/t.bin").value(), B("old"));
  }  // destroyed uncommitted
  CHECK_EQ(env.Files(), std::vector<std::string>{"out/t.bin"});
  CHECK_EQ(env.FileId("out/t.bin"), old_id);

  std::unique_ptr<AtomicFileSink> sink = env.NewAtomicFile("out/t.bin").value();
  REQUIRE(sink->Append(B("new bytes")).ok());
  REQUIRE(sink->Commit().ok());
  CHECK_EQ(env.Files(), std::vector<std::string>{"out/t.bin"});
  CHECK_EQ(env.GetFile("out/t.bin").value(), B("new bytes"));
  CHECK_NE(env.FileId("out/t.bin"), old_id);
  // A source opened before the rename still reads the old bytes.
  CHECK_EQ(Read(*before), "old");
  CHECK(env.violations().empty());

  // The caller's side of the contract.
  CHECK_EQ(sink->Append(B("x")).code(), Code::kInternal);
  CHECK_EQ(sink->Commit().code(), Code::kInternal);
  CHECK_EQ(env.violations(), std::vector<std::string>{"out/t.bin: Append after Commit", "out/t.bin: Commit twice"});
}

TEST_CASE("MemEnv streams and stdio") {
  MemEnv env;
  env.SetStdin(B("abc"));
  std::unique_ptr<StreamSource> in = env.OpenStream("-").value();
  std::byte buf[2];
  CHECK_EQ(in->Read(buf).value(), 2u);
  CHECK_EQ(in->Read(buf).value(), 1u);
  CHECK_EQ(in->position(), 3u);
  CHECK_EQ(in->Read(buf).value(), 0u);
  CHECK(env.violations().empty());
  CHECK_EQ(in->Read(buf).value(), 0u);  // reading again after the end
  CHECK_EQ(env.violations(), std::vector<std::string>{"<stdin>: Read after the stream returned 0 (end of stream)"});

  std::unique_ptr<Sink> out = env.StdoutSink().value();
  REQUIRE(out->Append(B("xy")).ok());
  CHECK_EQ(env.StdoutBytes(), B("xy"));
}

TEST_CASE("FaultEnv fails the n-th read with the path and offset") {
  MemEnv mem;
  mem.SetFile("f", "0123456789");
  FaultEnv env(&mem);
  std::unique_ptr<RandomSource> src = env.OpenRandom("f").value();
  std::byte buf[4];
  env.FailRead(2);
  CHECK(src->ReadAt(0, buf).ok());
  Status s = src->ReadAt(6, buf).status();
  CHECK_EQ(s.ToString(), "f: @ 6: io: read: injected failure (read #2)");
  CHECK(src->ReadAt(0, buf).ok());
  CHECK_EQ(env.reads(), 3u);
  // Small files are read through the same sources.
  env.Reset();
  env.FailRead(1);
  CHECK_EQ(env.ReadSmallFile("f", 100).status().code(), Code::kIO);
}

TEST_CASE("FaultEnv truncates random reads and shortens stream reads") {
  MemEnv mem;
  mem.SetFile("f", "0123456789");
  FaultEnv env(&mem);
  std::unique_ptr<RandomSource> src = env.OpenRandom("f").value();
  env.TruncateReadsAt(5);
  std::byte buf[4];
  CHECK_EQ(src->ReadAt(3, buf).value(), 2u);
  CHECK_EQ(src->ReadAt(5, buf).value(), 0u);
  CHECK_EQ(src->size(), 10u);
  Status truncated = ReadExactAt(*src, 3, buf);
  CHECK_EQ(truncated.code(), Code::kCorrupt);
  CHECK_EQ(truncated.offset(), 5u);

  env.SetStreamChunk(3);
  std::unique_ptr<StreamSource> in = env.OpenStream("f").value();
  std::byte big[8];
  CHECK_EQ(in->Read(big).value(), 3u);
  REQUIRE(ReadExact(*in, std::span<std::byte>(big, 7)).ok());
  CHECK_EQ(in->position(), 10u);
}

TEST_CASE("FaultEnv runs out of space at byte k and fails the n-th commit") {
  MemEnv mem;
  FaultEnv env(&mem);
  env.SetSpace(5);
  {
    std::unique_ptr<AtomicFileSink> sink = env.NewAtomicFile("t").value();
    REQUIRE(sink->Append(B("abc")).ok());
    Status full = sink->Append(B("defg"));
    CHECK_EQ(full.ToString(), "t: io: write: No space left on device (injected: disk of 5 bytes)");
    CHECK_EQ(sink->position(), 5u);
    CHECK_EQ(env.bytes_appended(), 5u);
  }
  CHECK(mem.Files().empty());

  env.Reset();
  env.FailCommit(2);
  std::unique_ptr<AtomicFileSink> a = env.NewAtomicFile("a").value();
  REQUIRE(a->Commit().ok());
  {
    std::unique_ptr<AtomicFileSink> b = env.NewAtomicFile("b").value();
    CHECK_EQ(b->Commit().ToString(), "b: io: rename: injected failure (commit #2)");
  }
  CHECK_EQ(mem.Files(), std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace zerofold::io
