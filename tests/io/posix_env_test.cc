#include "zerofold/env.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace zerofold {
namespace {

// The POSIX env's file ids: stat(2) identity, following symlinks.
TEST_CASE("PosixEnv GetFileId: the same file through ./, an absolute path, a symlink, a hard link") {
  char name[] = "/tmp/zf_posix_env_XXXXXX";
  REQUIRE(mkdtemp(name) != nullptr);
  const std::string dir = name;
  Env* env = Env::Default();
  const std::string file = dir + "/in.pt", other = dir + "/other.pt";
  {
    std::unique_ptr<AtomicFileSink> sink = env->NewAtomicFile(file).value();
    REQUIRE(sink->Commit().ok());
    std::unique_ptr<AtomicFileSink> sink2 = env->NewAtomicFile(other).value();
    REQUIRE(sink2->Commit().ok());
  }
  REQUIRE_EQ(symlink("in.pt", (dir + "/sym.pt").c_str()), 0);
  REQUIRE_EQ(link(file.c_str(), (dir + "/hard.pt").c_str()), 0);
  REQUIRE_EQ(symlink("nowhere", (dir + "/dangling.pt").c_str()), 0);

  const FileId id = env->GetFileId(file).value();
  for (const std::string& same : {dir + "/./in.pt", dir + "//in.pt", dir + "/sym.pt", dir + "/hard.pt"}) {
    CAPTURE(same);
    CHECK_EQ(env->GetFileId(same).value(), id);
    CHECK(SameFile(env, file, same).value());
  }
  CHECK_FALSE(SameFile(env, file, other).value());
  CHECK_FALSE(SameFile(env, file, dir).value());
  CHECK(SameFile(env, dir, dir + "/.").value());
  Status missing = env->GetFileId(dir + "/dangling.pt").status();
  CHECK_EQ(missing.code(), Code::kNotFound);
  CHECK_EQ(missing.ToString(), dir + "/dangling.pt: not found: stat: No such file or directory");
  CHECK_FALSE(SameFile(env, dir + "/dangling.pt", dir + "/dangling.pt").value());
  // A path through a file: ENOTDIR is an I/O error, which SameFile returns.
  CHECK_EQ(env->GetFileId(file + "/x").status().code(), Code::kIO);
  CHECK_EQ(SameFile(env, file, file + "/x").status().code(), Code::kIO);

  for (const char* f : {"in.pt", "other.pt", "sym.pt", "hard.pt", "dangling.pt"}) unlink((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace zerofold
