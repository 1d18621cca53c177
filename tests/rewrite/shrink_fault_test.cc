// rewrite::ShrinkFile and rewrite::ShrinkFolder through MemEnv and FaultEnv: after
// every injected fault the call fails with the path, and every target is
// absent, unchanged, or (folders) completely written; no temp file remains.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem_env.h"
#include "rewrite/shrink.h"
#include "support/fixtures.h"
#include "verify/verify.h"

namespace zerofold::rewrite {
namespace {

using testing::Fixture;
using testing::Text;

using Bytes = std::vector<std::byte>;



// Legacy input takes its top folder from the output's name, so every test
// writes to a file of the same name.
const std::string kIn = "in/ckpt.pt";
const std::string kOut = "out/ckpt.pt";

bool HasTempFile(const io::MemEnv& mem) {
  for (const std::string& f : mem.Files())
    if (f.find(".zerofold-tmp.") != std::string::npos) return true;
  return false;
}

// Small options: a buffer smaller than most storages, so storage copies take
// several reads and a fault can hit the middle of one.
ShrinkOptions SmallBuffer(bool verify = false) {
  ShrinkOptions o;
  o.buffer_bytes = 16;  // ShrinkFile rounds up to its minimum
  o.verify = verify;
  return o;
}

// The fixtures whose every injected fault is tried (bloated, unbloated,
// legacy, tied, zero-byte storages).
// (ground_truth.pt has storages larger than ShrinkFile's smallest buffer, so
// faults also hit the middle of a storage copy).
const std::string kFiles[] = {"torch/views.pt", "torch/state_dict.pt", "torch/legacy_views_tied.pt",
                              "torch/scalars_empty.pt", "hf/bloated/pytorch_model-00001-of-00003.bin",
                              "deepspeed/zero2_ws3_bf16/ground_truth.pt"};

// About 400 points spread over n bytes (every byte of small files); odd, so
// they fall at every position relative to 64-byte alignment.
uint64_t Step(uint64_t n) { return n / 400 | 1; }

struct Baseline {
  Bytes input;
  Bytes output;
  uint64_t reads = 0;
  bool copied_unchanged = false;  // already compact: in place, nothing is written
};

Baseline RunClean(const std::string& fixture, const ShrinkOptions& options) {
  Baseline b;
  b.input = Fixture(fixture);
  io::MemEnv mem;
  mem.SetFile(kIn, b.input);
  REQUIRE(mem.CreateDirs("out").ok());
  io::FaultEnv fault(&mem);
  Result<ShrinkReport> r = ShrinkFile(&fault, kIn, kOut, options);
  REQUIRE(r.ok());
  b.output = mem.GetFile(kOut).value();
  CHECK_EQ(r->output_file_bytes, b.output.size());
  b.reads = fault.reads();
  b.copied_unchanged = r->copied_unchanged;
  CHECK_EQ(b.copied_unchanged, b.output == b.input);
  CHECK(mem.violations().empty());
  return b;
}

TEST_CASE("the output does not depend on the buffer size") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, ShrinkOptions{});
    Baseline small = RunClean(name, SmallBuffer());
    CHECK(b.output == small.output);
    CHECK_GE(small.reads, b.reads);
  }
}

enum class Target { kAbsent, kExisting, kInPlace };

TEST_CASE("a failed read at any point leaves the target absent or unchanged, and no temp file") {
  for (bool verify : {false, true}) {
    for (Target target : {Target::kAbsent, Target::kExisting, Target::kInPlace}) {
      for (const std::string& name : kFiles) {
        CAPTURE(name);
        CAPTURE(verify);
        CAPTURE(static_cast<int>(target));
        Baseline b = RunClean(name, SmallBuffer(verify));
        REQUIRE_GT(b.reads, 3u);
        const std::string out = target == Target::kInPlace ? kIn : kOut;
        for (uint64_t n = 1; n <= b.reads; ++n) {
          CAPTURE(n);
          io::MemEnv mem;
          mem.SetFile(kIn, b.input);
          REQUIRE(mem.CreateDirs("out").ok());
          if (target == Target::kExisting) mem.SetFile(kOut, "old contents");
          const uint64_t id = mem.FileId(out);
          io::FaultEnv fault(&mem);
          fault.FailRead(n);
          Result<ShrinkReport> r = ShrinkFile(&fault, kIn, out, SmallBuffer(verify));
          if (r.ok()) {
            // In place, an input already compact is only read (not copied):
            // fewer reads than the baseline's, none past them fails.
            CHECK((target == Target::kInPlace && b.copied_unchanged));
            CHECK_EQ(fault.commits(), 0u);
            CHECK_EQ(mem.FileId(out), id);
            continue;
          }
          CHECK_EQ(r.status().code(), Code::kIO);
          // The read that failed was of the input, or (verify) of the output
          // written, which carries the target's name.
          CHECK_MESSAGE((r.status().path() == kIn || (verify && r.status().path() == out)),
                        r.status().ToString());
          CHECK_NE(r.status().offset(), kNoOffset);
          // Verification reads the output before the commit, so whatever
          // failed, nothing was committed: the input and the target are as
          // they were, also in place.
          CHECK_EQ(fault.commits(), 0u);
          CHECK(mem.GetFile(kIn).value() == b.input);
          CHECK_EQ(mem.FileId(out), id);  // 0: still absent
          if (target == Target::kExisting) CHECK(mem.GetFile(kOut).value() == Text("old contents"));
          CHECK_FALSE(HasTempFile(mem));
        }
      }
    }
  }
}

TEST_CASE("in place, the input is replaced by a new file holding the output, unless already compact") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, SmallBuffer());
    io::MemEnv mem;
    mem.SetFile(kIn, b.input);
    const uint64_t id = mem.FileId(kIn);
    REQUIRE(ShrinkFile(&mem, kIn, kIn, SmallBuffer()).ok());
    CHECK(mem.GetFile(kIn).value() == b.output);
    // An input already compact is left as it is, not replaced.
    CHECK_EQ(mem.FileId(kIn) == id, b.copied_unchanged);
    CHECK_EQ(mem.Files(), std::vector<std::string>{kIn});
  }
}

TEST_CASE("a file that shrinks while it is read is reported, not copied") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, SmallBuffer());
    for (uint64_t cut = 0; cut < b.input.size(); cut += Step(b.input.size())) {
      CAPTURE(cut);
      io::MemEnv mem;
      mem.SetFile(kIn, b.input);
      REQUIRE(mem.CreateDirs("out").ok());
      io::FaultEnv fault(&mem);
      fault.TruncateReadsAt(cut);
      Result<ShrinkReport> r = ShrinkFile(&fault, kIn, kOut, SmallBuffer());
      REQUIRE_FALSE(r.ok());
      // The reader sees the file end early: bad input, never a crash or a
      // partial output.
      CHECK_MESSAGE((r.status().code() == Code::kCorrupt || r.status().code() == Code::kUnsupported),
                    r.status().ToString());
      CHECK_EQ(r.status().path(), kIn);
      CHECK_FALSE(mem.GetFile(kOut).has_value());
      CHECK_FALSE(HasTempFile(mem));
    }
  }
}

TEST_CASE("a full disk at any byte leaves no output and no temp file") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, SmallBuffer());
    for (uint64_t k = 1; k < b.output.size(); k += Step(b.output.size())) {
      CAPTURE(k);
      io::MemEnv mem;
      mem.SetFile(kIn, b.input);
      REQUIRE(mem.CreateDirs("out").ok());
      mem.SetFile(kOut, "old contents");
      io::FaultEnv fault(&mem);
      fault.SetSpace(k);
      Result<ShrinkReport> r = ShrinkFile(&fault, kIn, kOut, SmallBuffer());
      REQUIRE_FALSE(r.ok());
      CHECK_EQ(r.status().code(), Code::kIO);
      CHECK_EQ(r.status().path(), kOut);
      CHECK_EQ(fault.bytes_appended(), k);  // it wrote what fit, then stopped
      CHECK(mem.GetFile(kOut).value() == Text("old contents"));
      CHECK_FALSE(HasTempFile(mem));
    }
    // Exactly enough space succeeds.
    io::MemEnv mem;
    mem.SetFile(kIn, b.input);
    REQUIRE(mem.CreateDirs("out").ok());
    io::FaultEnv fault(&mem);
    fault.SetSpace(b.output.size());
    REQUIRE(ShrinkFile(&fault, kIn, kOut, SmallBuffer()).ok());
    CHECK(mem.GetFile(kOut).value() == b.output);
  }
}

TEST_CASE("too little free disk for the planned output is refused before anything is written") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, SmallBuffer());
    for (uint64_t free : {uint64_t{0}, uint64_t{b.output.size() - 1}, uint64_t{b.output.size()}}) {
      CAPTURE(free);
      io::MemEnv mem;
      mem.SetFile(kIn, b.input);
      REQUIRE(mem.CreateDirs("out").ok());
      mem.SetFile(kOut, "old contents");
      mem.SetFreeBytes(free);
      io::FaultEnv fault(&mem);
      Result<ShrinkReport> r = ShrinkFile(&fault, kIn, kOut, SmallBuffer());
      if (free == b.output.size()) {
        REQUIRE(r.ok());
        CHECK(mem.GetFile(kOut).value() == b.output);
        continue;
      }
      REQUIRE_FALSE(r.ok());
      CHECK_EQ(r.status().code(), Code::kIO);
      CHECK_EQ(r.status().path(), kOut);
      CHECK_EQ(fault.bytes_appended(), 0u);
      CHECK(mem.GetFile(kOut).value() == Text("old contents"));
      CHECK_FALSE(HasTempFile(mem));
    }
  }
}

TEST_CASE("a failed rename leaves the target unchanged and no temp file") {
  for (const std::string& name : kFiles) {
    CAPTURE(name);
    Baseline b = RunClean(name, SmallBuffer());
    for (bool in_place : {false, true}) {
      CAPTURE(in_place);
      io::MemEnv mem;
      mem.SetFile(kIn, b.input);
      REQUIRE(mem.CreateDirs("out").ok());
      const std::string out = in_place ? kIn : kOut;
      io::FaultEnv fault(&mem);
      fault.FailCommit(1);
      Result<ShrinkReport> r = ShrinkFile(&fault, kIn, out, SmallBuffer());
      if (in_place && b.copied_unchanged) {  // nothing to commit
        CHECK(r.ok());
        CHECK(mem.GetFile(kIn).value() == b.input);
        continue;
      }
      CHECK_EQ(r.status().code(), Code::kIO);
      CHECK_EQ(r.status().path(), out);
      CHECK(mem.GetFile(kIn).value() == b.input);
      CHECK_EQ(mem.GetFile(kOut).has_value(), false);
      CHECK_FALSE(HasTempFile(mem));
      CHECK(mem.violations().empty());
    }
  }
}

TEST_CASE("verify of an in-place shrink compares the output with the input, then replaces the input") {
  Bytes input = Fixture("torch/views.pt");
  io::MemEnv mem;
  mem.SetFile(kIn, input);
  REQUIRE(mem.CreateDirs("out").ok());
  Result<ShrinkReport> r = ShrinkFile(&mem, kIn, kIn, SmallBuffer(/*verify=*/true));
  REQUIRE(r.ok());
  CHECK(r->verified);
  CHECK_EQ(r->verified_tensors, r->tensors);
  CHECK_LT(mem.GetFile(kIn).value().size(), input.size());
  CHECK_FALSE(HasTempFile(mem));
}

// Folders: every shard is written atomically, one at a time.
struct FolderBaseline {
  std::map<std::string, Bytes> input;   // name -> bytes
  std::map<std::string, Bytes> output;  // name -> bytes
  uint64_t reads = 0;
  uint64_t commits = 0;
};

const char* const kFolder = "hf/bloated";
const char* const kFolderFiles[] = {"config.json", "pytorch_model-00001-of-00003.bin",
                                    "pytorch_model-00002-of-00003.bin", "pytorch_model-00003-of-00003.bin",
                                    "pytorch_model.bin.index.json"};

void LoadFolder(io::MemEnv& mem, const std::string& dir, const std::map<std::string, Bytes>& files) {
  for (const auto& [name, bytes] : files) mem.SetFile(dir + "/" + name, bytes);
}

FolderBaseline RunCleanFolder() {
  FolderBaseline b;
  for (const char* f : kFolderFiles) b.input[f] = Fixture(std::string(kFolder) + "/" + f);
  io::MemEnv mem;
  LoadFolder(mem, "in", b.input);
  io::FaultEnv fault(&mem);
  Result<FolderReport> r = ShrinkFolder(&fault, "in", "out", SmallBuffer());
  REQUIRE(r.ok());
  for (const char* f : kFolderFiles) b.output[f] = mem.GetFile(std::string("out/") + f).value();
  CHECK_EQ(mem.Files().size(), 2 * std::size(kFolderFiles));
  b.reads = fault.reads();
  b.commits = fault.commits();
  CHECK_EQ(b.commits, std::size(kFolderFiles));
  return b;
}

// Each file of `dir` is absent, equal to `before`, or equal to `after`.
void CheckEachOldOrNew(const io::MemEnv& mem, const std::string& dir, const std::map<std::string, Bytes>* before,
                       const std::map<std::string, Bytes>& after) {
  for (const auto& entry : after) {
    // Plain references: clang 14 cannot capture structured bindings (CAPTURE).
    const std::string& name = entry.first;
    const Bytes& bytes = entry.second;
    CAPTURE(name);
    std::optional<Bytes> now = mem.GetFile(dir + "/" + name);
    if (!now) {
      CHECK(before == nullptr);
      continue;
    }
    CHECK((*now == bytes || (before != nullptr && *now == before->at(name))));
  }
  CHECK_FALSE(HasTempFile(mem));
}

enum class Fault { kRead, kCommit, kSpace };

// Shrinks b's input folder, loaded as `in`, into `out` with one fault set.
Status FaultedFolderShrink(io::MemEnv& mem, const FolderBaseline& b, const std::string& in, const std::string& out,
                           Fault fault_kind, uint64_t n) {
  LoadFolder(mem, in, b.input);
  io::FaultEnv fault(&mem);
  if (fault_kind == Fault::kRead) fault.FailRead(n);
  if (fault_kind == Fault::kCommit) fault.FailCommit(n);
  if (fault_kind == Fault::kSpace) fault.SetSpace(n);
  return ShrinkFolder(&fault, in, out, SmallBuffer()).status();
}

TEST_CASE("a fault in a folder shrink leaves each file old or new, never partial") {
  FolderBaseline b = RunCleanFolder();
  uint64_t total = 0;
  for (const auto& [name, bytes] : b.output) total += bytes.size();
  struct Run {
    Fault fault;
    uint64_t last;
    uint64_t step;
    const char* path_prefix;  // of the file the error names
  };
  for (const Run& run : {Run{Fault::kRead, b.reads, 1, "in/"}, Run{Fault::kCommit, b.commits, 1, "out/"},
                         Run{Fault::kSpace, total - 1, 97, "out/"}}) {
    for (uint64_t n = 1; n <= run.last; n += run.step) {
      CAPTURE(static_cast<int>(run.fault));
      CAPTURE(n);
      io::MemEnv mem;
      Status s = FaultedFolderShrink(mem, b, "in", "out", run.fault, n);
      CHECK_EQ(s.code(), Code::kIO);
      CHECK_EQ(s.path().rfind(run.path_prefix, 0), 0u);
      CheckEachOldOrNew(mem, "out", nullptr, b.output);
      CheckEachOldOrNew(mem, "in", &b.input, b.input);
    }
  }
}

TEST_CASE("a fault in an in-place folder shrink leaves each shard old or new") {
  FolderBaseline b = RunCleanFolder();
  std::map<std::string, Bytes> shrunk = b.output;
  shrunk.erase("config.json");  // in place, other files are not rewritten
  for (uint64_t n = 1; n <= b.reads; ++n) {
    CAPTURE(n);
    io::MemEnv mem;
    Status s = FaultedFolderShrink(mem, b, "m", "m", Fault::kRead, n);
    if (s.ok()) continue;  // in place reads fewer files (no copies): n may be past the last read
    CHECK_EQ(s.code(), Code::kIO);
    CheckEachOldOrNew(mem, "m", &b.input, shrunk);
    CHECK(mem.GetFile("m/config.json").value() == b.input.at("config.json"));
  }
}

}  // namespace
}  // namespace zerofold::rewrite
