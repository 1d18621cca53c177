// Temp file names carry their writer; a sweep removes only those of
// writers that are certainly gone.
#include "io/temp_name.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem_env.h"

namespace zerofold::io {
namespace {

const WriterId kSelf = {0x3d1219c7, 0x5d169d8c, 4242, 777};

TEST_CASE("a temp file name carries its writer and round-trips") {
  const std::string name = TempFileName("pytorch_model.bin", kSelf, 0xabcdef012345);
  CHECK_EQ(name, ".pytorch_model.bin.zerofold-tmp.3d1219c7-5d169d8c-4242-777.abcdef012345");
  CHECK(ParseTempFileName(name) == kSelf);
  // A target whose own name holds the marker.
  const std::string odd = TempFileName("a.zerofold-tmp.b", kSelf, 1);
  CHECK(ParseTempFileName(odd) == kSelf);
}

TEST_CASE("names TempFileName does not make are not ours") {
  const char* const kNotOurs[] = {
      "pytorch_model.bin",
      ".pytorch_model.bin.zf-tmp-00000000abcd",  // an older zerofold's: no writer to test
      "x.zerofold-tmp.3d1219c7-5d169d8c-4242-777.abcdef012345",   // no leading dot
      "..zerofold-tmp.3d1219c7-5d169d8c-4242-777.abcdef012345",   // no target name
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242-777.abcdef01234",   // 11 random digits
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242-777.abcdef0123456", // 13
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242-777.ABCDEF012345",  // upper case
      ".a.zerofold-tmp.3d1219c-5d169d8c-4242-777.abcdef012345",   // 7 machine digits
      ".a.zerofold-tmp.3d1219c7-5d169d8c-04242-777.abcdef012345", // leading zero
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242.abcdef012345",      // no start
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242-777-1.abcdef012345",
      ".a.zerofold-tmp.3d1219c7-5d169d8c--777.abcdef012345",
      ".a.zerofold-tmp.3d1219c7-5d169d8c-4242-7x7.abcdef012345",
      ".a.zerofold-tmp.3d1219c7-5d169d8c-99999999999999999999-1.abcdef012345",
  };
  for (const char* n : kNotOurs) {
    CAPTURE(std::string(n));
    CHECK_FALSE(ParseTempFileName(n).has_value());
  }
}

TEST_CASE("a writer is gone only when this machine's process table says so") {
  struct Case {
    const char* name;
    WriterId writer;
    ProcessState state;  // what the probe says of writer.pid
    bool gone;
  };
  const Case kCases[] = {
      {"this process", kSelf, {ProcessState::kRunning, 777}, false},
      {"a live writer", {kSelf.machine, kSelf.boot, 17, 5}, {ProcessState::kRunning, 5}, false},
      {"an exited writer", {kSelf.machine, kSelf.boot, 17, 5}, {ProcessState::kAbsent, 0}, true},
      {"its pid reused", {kSelf.machine, kSelf.boot, 17, 5}, {ProcessState::kRunning, 9000}, true},
      {"a pid we cannot read", {kSelf.machine, kSelf.boot, 17, 5}, {ProcessState::kUnknown, 0}, false},
      {"an earlier boot", {kSelf.machine, 0x11111111, 17, 5}, {ProcessState::kRunning, 5}, true},
      {"another machine", {0x22222222, kSelf.boot, 17, 5}, {ProcessState::kAbsent, 0}, false},
      {"another machine, another boot", {0x22222222, 0x11111111, 17, 5}, {ProcessState::kAbsent, 0}, false},
  };
  for (const Case& c : kCases) {
    CAPTURE(std::string(c.name));
    uint64_t probed = 0;
    auto probe = [&](uint64_t pid) {
      probed = pid;
      return c.state;
    };
    CHECK_EQ(WriterGone(c.writer, kSelf, probe), c.gone);
    if (probed != 0) CHECK_EQ(probed, c.writer.pid);
  }
}

TEST_CASE("MemEnv: the first temp file in a folder sweeps the temp files of writers that are gone") {
  MemEnv env;
  REQUIRE(env.CreateDirs("out").ok());
  REQUIRE(env.CreateDirs("elsewhere").ok());
  const WriterId m = MemEnv::kMemWriter;
  auto temp = [](const std::string& dir, const WriterId& w) { return dir + "/" + TempFileName("t.bin", w, 7); };
  const std::string dead = temp("out", {m.machine, m.boot, 2, 3});
  const std::string reused = temp("out", {m.machine, m.boot, 4, 3});
  const std::string live = temp("out", {m.machine, m.boot, 5, 6});
  const std::string other_host = temp("out", {1, m.boot, 2, 3});
  const std::string old_boot = temp("out", {m.machine, 1, 5, 6});
  const std::string not_ours = "out/.t.bin.zf-tmp-000000000001";
  const std::string other_folder = temp("elsewhere", {m.machine, m.boot, 2, 3});
  for (const std::string& f : {dead, reused, live, other_host, old_boot, not_ours, other_folder}) env.SetFile(f, "x");
  env.SetProcess(4, 99);  // pid 4 now runs another program
  env.SetProcess(5, 6);
  {
    auto sink = env.NewAtomicFile("out/t.bin").value();
    REQUIRE(sink->Commit().ok());
  }
  std::vector<std::string> removed = env.TakeRemovedTempFiles();
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> want = {dead, reused, old_boot};
  std::sort(want.begin(), want.end());
  CHECK_EQ(removed, want);
  CHECK(env.TakeRemovedTempFiles().empty());
  for (const std::string& f : {live, other_host, not_ours, other_folder}) CHECK(env.FileExists(f));
  for (const std::string& f : want) CHECK_FALSE(env.FileExists(f));
  // Once per folder: a temp file left later is not swept by this env again.
  env.SetFile(dead, "x");
  { auto sink = env.NewAtomicFile("out/u.bin").value(); }
  CHECK(env.FileExists(dead));
  CHECK(env.TakeRemovedTempFiles().empty());
}

}  // namespace
}  // namespace zerofold::io
