#include "zerofold/env.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/temp_name.h"

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

// The first 8 hex digits of an id file, as the env reads them (0 if absent).
uint32_t IdPrefix(const char* path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text.size() < 8) return 0;
  return static_cast<uint32_t>(std::stoul(text.substr(0, 8), nullptr, 16));
}

// Field 22 of /proc/1/stat: init's start time.
uint64_t InitStart() {
  std::ifstream f("/proc/1/stat");
  std::string line;
  std::getline(f, line);
  std::string rest = line.substr(line.rfind(')') + 2);
  std::vector<std::string> fields;
  for (size_t at = 0; at <= rest.size();) {
    size_t sp = std::min(rest.find(' ', at), rest.size());
    fields.push_back(rest.substr(at, sp - at));
    at = sp + 1;
  }
  return std::stoull(fields.at(22 - 3));
}

TEST_CASE("PosixEnv: a new temp file's folder is swept of temp files whose writers are gone, and only those") {
  char name[] = "/tmp/zf_posix_sweep_XXXXXX";
  REQUIRE(mkdtemp(name) != nullptr);
  const std::string dir = name;
  const uint32_t machine = IdPrefix("/etc/machine-id"), boot = IdPrefix("/proc/sys/kernel/random/boot_id");
  // pid_max is at most 4194304 (2^22): this pid never runs.
  const std::string dead = dir + "/" + io::TempFileName("a.pt", {machine, boot, 4194305, 7}, 1);
  const std::string live = dir + "/" + io::TempFileName("a.pt", {machine, boot, 1, InitStart()}, 2);
  const std::string reused = dir + "/" + io::TempFileName("a.pt", {machine, boot, 1, InitStart() + 1}, 3);
  const std::string remote = dir + "/" + io::TempFileName("a.pt", {machine + 1, boot, 4194305, 7}, 4);
  const std::string other = dir + "/.a.pt.zf-tmp-000000000005";
  for (const std::string& f : {dead, live, reused, remote, other}) std::ofstream(f) << "x";
  Env* env = Env::Default();
  {
    std::unique_ptr<AtomicFileSink> sink = env->NewAtomicFile(dir + "/a.pt").value();
    REQUIRE(sink->Commit().ok());
  }
  std::vector<std::string> removed = env->TakeRemovedTempFiles();
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> want = {dead, reused};
  std::sort(want.begin(), want.end());
  CHECK_EQ(removed, want);
  for (const std::string& f : {live, remote, other, dir + "/a.pt"}) CHECK(env->FileExists(f));
  for (const std::string& f : {dead, reused}) CHECK_FALSE(env->FileExists(f));
  for (const std::string& f : {live, remote, other, dir + "/a.pt"}) unlink(f.c_str());
  rmdir(dir.c_str());
}

// AtomicFileSink as the file system shows it (env.h): new files and folders
// take the umask off 0666 and 0777; a replaced file's mode stays; a symlink
// target is written through, in the final target's folder, a dangling one
// creating its target; a loop of links is refused.
std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE_EQ(::stat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}
bool IsLink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}
size_t TempFilesIn(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += io::ParseTempFileName(e.path().filename().string()).has_value() ? 1 : 0;
  return n;
}
Status WriteAtomic(Env* env, const std::string& path, std::string_view text, size_t* temps_beside = nullptr,
                   const std::string& beside = "") {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileSink> sink, env->NewAtomicFile(path));
  CHECK_EQ(sink->name(), path);
  ZF_TRY(sink->Append(std::as_bytes(std::span(text.data(), text.size()))));
  if (temps_beside != nullptr) *temps_beside = TempFilesIn(beside);
  return sink->Commit();
}

TEST_CASE("PosixEnv NewAtomicFile: modes from the umask or the replaced file; symlinks written through") {
  char name[] = "/tmp/zf_posix_files_XXXXXX";
  REQUIRE(mkdtemp(name) != nullptr);
  const std::string dir = name;
  Env* env = Env::Default();
  const mode_t saved = ::umask(002);

  REQUIRE(env->CreateDirs(dir + "/new/deeper").ok());
  CHECK_EQ(ModeOf(dir + "/new"), 0775);
  CHECK_EQ(ModeOf(dir + "/new/deeper"), 0775);
  REQUIRE(WriteAtomic(env, dir + "/new/a.pt", "a").ok());
  CHECK_EQ(ModeOf(dir + "/new/a.pt"), 0664);
  ::umask(077);
  REQUIRE(WriteAtomic(env, dir + "/new/b.pt", "b").ok());
  CHECK_EQ(ModeOf(dir + "/new/b.pt"), 0600);
  // Replaced: the mode stays, whatever the umask.
  REQUIRE_EQ(::chmod((dir + "/new/a.pt").c_str(), 0644), 0);
  REQUIRE(WriteAtomic(env, dir + "/new/a.pt", "a2").ok());
  CHECK_EQ(ModeOf(dir + "/new/a.pt"), 0644);
  CHECK_EQ(Slurp(dir + "/new/a.pt"), "a2");
  ::umask(saved);

  // A chain of links: relative, then absolute, across folders.
  REQUIRE(env->CreateDirs(dir + "/blobs").ok());
  REQUIRE(env->CreateDirs(dir + "/snap").ok());
  REQUIRE(WriteAtomic(env, dir + "/blobs/h1", "old").ok());
  REQUIRE_EQ(::chmod((dir + "/blobs/h1").c_str(), 0640), 0);
  REQUIRE_EQ(symlink((dir + "/blobs/h1").c_str(), (dir + "/snap/hop").c_str()), 0);
  REQUIRE_EQ(symlink("../snap/hop", (dir + "/new/model.pt").c_str()), 0);
  size_t temps = 0;
  REQUIRE(WriteAtomic(env, dir + "/new/model.pt", "new", &temps, dir + "/blobs").ok());
  CHECK_EQ(temps, 1);  // the temp file was beside the blob
  CHECK(IsLink(dir + "/new/model.pt"));
  CHECK(IsLink(dir + "/snap/hop"));
  CHECK_FALSE(IsLink(dir + "/blobs/h1"));
  CHECK_EQ(Slurp(dir + "/blobs/h1"), "new");
  CHECK_EQ(ModeOf(dir + "/blobs/h1"), 0640);
  for (const std::string& d : {dir + "/new", dir + "/snap", dir + "/blobs"}) CHECK_EQ(TempFilesIn(d), 0);

  // A bare name, relative to the working folder, linking into a folder.
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE_EQ(chdir((dir + "/new").c_str()), 0);
  REQUIRE_EQ(symlink("../blobs/h2", "bare.pt"), 0);  // dangling: written through, creating h2
  CHECK(WriteAtomic(env, "bare.pt", "h2").ok());
  REQUIRE_EQ(chdir(cwd), 0);
  CHECK(IsLink(dir + "/new/bare.pt"));
  CHECK_EQ(Slurp(dir + "/blobs/h2"), "h2");

  // A loop: refused, nothing written.
  REQUIRE_EQ(symlink("l2", (dir + "/new/l1").c_str()), 0);
  REQUIRE_EQ(symlink("l1", (dir + "/new/l2").c_str()), 0);
  Status loop = env->NewAtomicFile(dir + "/new/l1").status();
  CHECK_EQ(loop.code(), Code::kIO);
  CHECK_EQ(loop.ToString(), dir + "/new/l1: io: follow symlinks: Too many levels of symbolic links");
  CHECK(IsLink(dir + "/new/l1"));

  std::filesystem::remove_all(dir);
}

// Open descriptors under the limit on open files: PosixEnv keeps at most half
// the soft RLIMIT_NOFILE of its random sources open, reopening one when read
// again; a file replaced meanwhile is refused, not read in its new form.
size_t OpenDescriptors() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.exists() ? 1 : 0;
  return n;
}

TEST_CASE("PosixEnv random sources: at most half the soft open-file limit open; reread after closing; a replaced file refused") {
  char name[] = "/tmp/zf_posix_pool_XXXXXX";
  REQUIRE(mkdtemp(name) != nullptr);
  const std::string dir = name;
  Env* env = Env::Default();
  constexpr int kFiles = 60;
  auto path = [&](int i) { return dir + "/f" + std::to_string(i); };
  auto content = [](int i) { return std::string(100 + i, static_cast<char>('a' + i % 26)); };
  for (int i = 0; i < kFiles; ++i) std::ofstream(path(i), std::ios::binary) << content(i);

  struct rlimit saved;
  REQUIRE_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  const size_t before = OpenDescriptors();
  struct rlimit low = saved;
  low.rlim_cur = before + 40;  // budget: (before + 40) / 2, fewer than kFiles
  REQUIRE_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const size_t budget = (before + 40) / 2;
  REQUIRE_LT(budget, static_cast<size_t>(kFiles));

  std::vector<std::unique_ptr<RandomSource>> sources;
  for (int i = 0; i < kFiles; ++i) sources.push_back(env->OpenRandom(path(i)).value());
  CHECK_LE(OpenDescriptors(), before + budget);
  // Three rounds over every file, each read whole: the right bytes each time.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kFiles; ++i) {
      CAPTURE(i);
      std::string got(sources[i]->size(), '\0');
      REQUIRE(ReadExactAt(*sources[i], 0, std::as_writable_bytes(std::span(got))).ok());
      CHECK_EQ(got, content(i));
    }
    CHECK_LE(OpenDescriptors(), before + budget);
  }
  // File 0 was closed (read longest ago); replace it: the reread is refused.
  REQUIRE_EQ(rename(path(1).c_str(), path(0).c_str()), 0);
  std::byte b[4];
  Status replaced = ReadExactAt(*sources[0], 0, b);
  CHECK_EQ(replaced.code(), Code::kIO);
  CHECK_EQ(replaced.ToString(), path(0) + ": io: was replaced or changed size while being read (100 bytes, now 101)");
  // The last file, read most recently, is still open and reads on.
  CHECK(ReadExactAt(*sources[kFiles - 1], 0, b).ok());
  sources.clear();
  CHECK_EQ(OpenDescriptors(), before);
  REQUIRE_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  for (int i = 0; i < kFiles; ++i) unlink(path(i).c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace zerofold
