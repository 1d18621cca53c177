#include "io/exit_cleanup.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "zerofold/env.h"

namespace zerofold::io {
namespace {

using Kind = ExitCleanup::Kind;

struct TempDir {
  TempDir() {
    char name[] = "/tmp/zf_exit_cleanup_XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string Touch(const std::string& name) const {
    const std::string p = path + "/" + name;
    FILE* f = std::fopen(p.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
    return p;
  }
  std::string path;
};

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

sigset_t NoSignals() {
  sigset_t none;
  sigemptyset(&none);
  return none;
}

TEST_CASE("ExitCleanup Stop: removes armed temp files, and outputs only when asked") {
  TempDir dir;
  for (bool outputs : {true, false}) {
    CAPTURE(outputs);
    ExitCleanup cleanup(NoSignals());
    const std::string temp = dir.Touch("a.tmp"), out = dir.Touch("out.bin"), unarmed = dir.Touch("unarmed"),
                      dropped = dir.Touch("dropped"), kept = dir.Touch("kept.bin");
    ExitCleanup::Entry t(&cleanup, temp, Kind::kTemp), o(&cleanup, out, Kind::kOutput);
    ExitCleanup::Entry u(&cleanup, unarmed, Kind::kTemp), d(&cleanup, dropped, Kind::kTemp);
    t.Arm();
    o.Arm();
    d.Arm();
    d.Drop();
    {
      ExitCleanup::Entry k(&cleanup, kept, Kind::kOutput);
      k.Arm();
      k.Keep();  // outlives its handle, armed
    }
    {
      ExitCleanup::Entry gone(&cleanup, dir.path + "/never-made", Kind::kOutput);
      gone.Arm();  // dropped at scope end
    }
    ExitCleanup::Entry moved(&cleanup, dir.path + "/absent", Kind::kTemp);
    moved.Arm();
    ExitCleanup::Entry target = std::move(moved);  // one node, still armed; the moved-from is empty
    moved.Drop();

    CHECK_EQ(cleanup.Stop(outputs), outputs ? 3u : 1u);  // "absent" was never there
    CHECK_FALSE(Exists(temp));
    CHECK_EQ(Exists(out), !outputs);
    CHECK_EQ(Exists(kept), !outputs);
    CHECK(Exists(unarmed));
    CHECK(Exists(dropped));
    for (const char* f : {"out.bin", "unarmed", "dropped", "kept.bin"}) unlink((dir.path + "/" + f).c_str());
  }
}

TEST_CASE("ExitCleanup: an Entry or Section given no registry does nothing") {
  ExitCleanup::Entry none(nullptr, "/nonexistent/x", Kind::kTemp);
  none.Arm();
  { ExitCleanup::Section section(nullptr); }
  none.Drop();
  // The library never turns the process's registry on (only the CLI does).
  CHECK(ExitCleanup::Process() == nullptr);
}

// A file made in a section that was open when the stop began is removed:
// the stop waits for the section to end before it walks.
TEST_CASE("ExitCleanup Stop: waits for an open section, and removes what it made") {
  TempDir dir;
  ExitCleanup cleanup(NoSignals());
  const std::string path = dir.path + "/made-in-section";
  ExitCleanup::Entry entry(&cleanup, path, Kind::kTemp);
  std::atomic<bool> inside{false}, go{false}, stopped{false};
  std::thread maker([&] {
    ExitCleanup::Section section(&cleanup);
    inside = true;
    while (!go) std::this_thread::yield();
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fclose(f);
      entry.Arm();
    }
  });
  while (!inside) std::this_thread::yield();
  size_t removed = 0;
  std::thread stopper([&] {
    removed = cleanup.Stop(true);
    stopped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(stopped.load());  // a section is open: the stop may not walk yet
  go = true;
  maker.join();
  stopper.join();
  CHECK_EQ(removed, 1u);
  CHECK_FALSE(Exists(path));
}

// The POSIX env registers its temp files and the final paths its commits
// create once the process's registry is on. Checked in a child process: a
// registry once on stays on, and a stopped one makes later sections wait.
TEST_CASE("ExitCleanup with PosixEnv: temp files and created outputs go, a replaced file stays") {
  TempDir dir;
  const std::string made = dir.path + "/made.bin", replaced = dir.Touch("replaced.bin"), open = dir.path + "/open.bin",
                    late = dir.path + "/late.bin";
  for (bool outputs : {true, false}) {
    CAPTURE(outputs);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ExitCleanup* cleanup = ExitCleanup::EnableProcess(NoSignals());
      Env* env = Env::Default();
      std::unique_ptr<AtomicFileSink> a = env->NewAtomicFile(made).value();
      std::unique_ptr<AtomicFileSink> b = env->NewAtomicFile(replaced).value();
      std::unique_ptr<AtomicFileSink> c = env->NewAtomicFile(open).value();  // never committed: its temp file
      if (!a->Commit().ok() || !b->Commit().ok()) _exit(10);
      a.reset();
      b.reset();
      {
        // Committed, then removed by the run (an ordinary rollback): no trouble for the stop.
        std::unique_ptr<AtomicFileSink> d = env->NewAtomicFile(late).value();
        if (!d->Commit().ok() || !env->RemoveFile(late).ok()) _exit(11);
      }
      const size_t removed = cleanup->Stop(outputs);
      _exit(static_cast<int>(removed));  // c's temp file (and made.bin when outputs)
    }
    int status = 0;
    REQUIRE_EQ(waitpid(child, &status, 0), child);
    REQUIRE(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), outputs ? 2 : 1);
    CHECK_EQ(Exists(made), !outputs);
    CHECK(Exists(replaced));  // not made by the run: never removed
    CHECK_FALSE(Exists(open));
    CHECK_FALSE(Exists(late));
    CHECK_NE(std::system(("ls -A '" + dir.path + "' | grep -q zerofold-tmp").c_str()), 0);  // no temp file left
    unlink(made.c_str());
  }
}

}  // namespace
}  // namespace zerofold::io
