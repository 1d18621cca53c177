#include "output/target.h"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem_env.h"

namespace zerofold::output {
namespace {

constexpr auto kTorch = ShardFormat::kTorch;
constexpr auto kSafetensors = ShardFormat::kSafetensors;

TEST_CASE("FormatByName: the extension says the format; .zst says its inner name's") {
  CHECK_EQ(FormatByName("a/model.safetensors"), kSafetensors);
  CHECK_EQ(FormatByName("w.pt.zst"), kTorch);
  CHECK_EQ(FormatByName("w.safetensors.zst"), kSafetensors);
  for (const char* torch_name : {"x.bin", "x.pt", "x.pth", "x.ckpt"}) CHECK_EQ(FormatByName(torch_name), kTorch);
  for (const char* none : {"model.st", "w.zst", "out", ".pt", "x.pt/", ".safetensors"})
    CHECK_EQ(FormatByName(none), std::nullopt);
}

TEST_CASE("ResolveTarget reads OUT the same way for every job") {
  io::MemEnv env;
  env.SetFile("dir/x", "x");
  env.SetFile("w.pt", "x");
  struct Case {
    const char* name;
    std::string out;
    TargetRequest request;
    std::string error;  // "" for OK
    TargetKind kind = TargetKind::kFile;
    ShardFormat format = kTorch;
    bool zstd = false;
  };
  TargetRequest shrink;  // a file IN, torch by default
  shrink.default_format = kTorch;
  TargetRequest convert;  // no default
  TargetRequest merge;  // a folder IN, no streams
  merge.input_is_folder = true;
  merge.default_format = kTorch;
  merge.streams = false;
  TargetRequest to_st = convert;
  to_st.to = kSafetensors;
  TargetRequest to_torch = convert;
  to_torch.to = kTorch;
  TargetRequest shards = shrink;
  shards.shards = true;
  TargetRequest part = shrink;
  part.part = true;
  TargetRequest folder_in = shrink;
  folder_in.input_is_folder = true;
  const Case cases[] = {
      {"a torch name", "o.pt", shrink, "", TargetKind::kFile, kTorch},
      {"a safetensors name decides for shrink too", "o.safetensors", shrink, "", TargetKind::kFile, kSafetensors},
      {"zstd of a safetensors name", "o.safetensors.zst", convert, "", TargetKind::kFile, kSafetensors, true},
      {"standard output takes --to", "-", to_st, "", TargetKind::kStdout, kSafetensors},
      {"a trailing slash is a folder", "new/", to_torch, "", TargetKind::kFolder, kTorch},
      {"an existing folder is a folder", "dir", to_st, "", TargetKind::kFolder, kSafetensors},
      {"a file IN's OUT without extension is a file", "weights", shrink, "", TargetKind::kFile, kTorch},
      {"an unknown extension with --to, file IN", "o.st", to_st, "", TargetKind::kFile, kSafetensors},
      {"a folder IN's plain name is a folder", "llama-3.1-8b", merge, "", TargetKind::kFolder, kTorch},
      {"a folder IN's file name", "w.bin", merge, "", TargetKind::kFile, kTorch},
      {"--to against the name", "o.safetensors", to_torch,
       "o.safetensors: invalid argument: --to torch contradicts the safetensors file name"},
      {"--to against a .zst name", "o.pt.zst", to_st,
       "o.pt.zst: invalid argument: --to safetensors contradicts the torch file name"},
      {"convert cannot tell", "o.st", convert,
       "invalid argument: cannot tell the output format from 'o.st': add --to torch or --to safetensors"},
      {"a folder needs --to for convert", "o/", convert,
       "invalid argument: cannot tell the output format from 'o/': add --to torch or --to safetensors"},
      {"a folder IN's unknown extension", "model.st", merge,
       "model.st: invalid argument: names no format (.safetensors, .bin, .pt, .pth, .ckpt, each with .zst) and IN "
       "is a folder: end OUT with '/' for a folder, or give a file name of a format"},
      {"merge writes no .zst", "w.pt.zst", merge,
       "w.pt.zst: invalid argument: is a stream ('-' or .zst), which this command does not write; name a file or a "
       "folder (and compress it afterwards)"},
      {"merge writes no standard output", "-", merge,
       "-: invalid argument: is a stream ('-' or .zst), which this command does not write; name a file or a folder "
       "(and compress it afterwards)"},
      {"shards into a file", "w.pt", shards,
       "w.pt: invalid argument: --max-shard-size writes shards into a folder; make OUT a folder (end it with '/')"},
      {"shards into a folder", "o/", shards, "", TargetKind::kFolder, kTorch},
      {"parts of a file", "w.pt", part,
       "w.pt: invalid argument: --part divides the files of a folder OUT; this OUT is one file, written by one run "
       "(end OUT with '/' for a folder)"},
      {"parts of standard output", "-", part,
       "-: invalid argument: --part divides the files of a folder OUT; this OUT is one file, written by one run "
       "(end OUT with '/' for a folder)"},
      {"an existing file is a file", "w.pt", folder_in, "", TargetKind::kFile, kTorch},
      {"a bare extension", "out/.safetensors", shrink,
       "out/.safetensors: invalid argument: names no file: give a name before the extension"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Result<Target> t = ResolveTarget(&env, c.out, c.request);
    CHECK_EQ(t.ok() ? "" : t.status().ToString(), c.error);
    if (!t.ok() || !c.error.empty()) continue;
    CHECK_EQ(static_cast<int>(t->kind), static_cast<int>(c.kind));
    CHECK_EQ(t->format, c.format);
    CHECK_EQ(t->zstd, c.zstd);
  }
}

TEST_CASE("CheckTargets: inputs by any name, then without force existing files and an earlier save") {
  io::MemEnv env;
  env.SetFile("in/a.bin", "a");
  env.SetFile("in/b.bin", "b");
  env.SetFile("out/other.bin", "o");
  env.SetFile("out/old-00001.bin", "o");
  REQUIRE(env.Link("in/b.bin", "out/b.bin"));
  const std::vector<std::string> inputs = {"in/a.bin", "in/b.bin", "in/gone.bin"};
  struct Case {
    const char* name;
    TargetFiles files;
    bool force;
    std::string error;  // "" for OK
  } cases[] = {
      {"new files", {{"out/a.bin", "out/new.bin"}, {}}, false, ""},
      {"nothing", {{}, {}}, false, ""},
      {"an existing file", {{"out/new.bin", "out/other.bin"}, {}}, false,
       "out/other.bin: invalid argument: exists; use --force to replace it"},
      {"an existing file, forced", {{"out/other.bin"}, {}}, true, ""},
      {"an earlier save's file", {{"out/new.bin"}, {"out/old-00001.bin"}}, false,
       "out/old-00001.bin: invalid argument: is part of an earlier save in the output folder; use --force to replace "
       "it"},
      {"an earlier save's file, forced", {{"out/new.bin"}, {"out/old-00001.bin"}}, true, ""},
      {"an input as written, even forced", {{"out/a.bin", "in/a.bin"}, {}}, true,
       "in/a.bin: invalid argument: is an input file, which the output would destroy"},
      {"an input spelled otherwise", {{"./in//a.bin"}, {}}, true,
       "./in//a.bin: invalid argument: is an input file, which the output would destroy: in/a.bin"},
      {"a hard link to an input, removed", {{}, {"out/b.bin"}}, true,
       "out/b.bin: invalid argument: is an input file, which the output would destroy: in/b.bin"},
      {"an input that does not exist names no file", {{"in/gone.bin"}, {}}, false, ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Status s = CheckTargets(&env, inputs, c.files, c.force);
    CHECK_EQ(s.ok() ? "" : s.ToString(), c.error);
  }
}

TEST_CASE("CheckFreeSpace asks the file system of the nearest existing folder") {
  io::MemEnv mem;
  mem.SetFile("disk/in.bin", "x");
  mem.SetFreeBytes(1000);
  CHECK(CheckFreeSpace(&mem, "disk/new/deeper/out.bin", 1000).ok());
  Status s = CheckFreeSpace(&mem, "disk/new/out.bin", 1001);
  CHECK_EQ(s.ToString(), "disk/new/out.bin: io: needs 1001 bytes for the output, and the file system holds "
                         "1000 free; nothing was written");
  io::FaultEnv fault(&mem);
  fault.SetFreeBytes(10);
  CHECK_EQ(CheckFreeSpace(&fault, "disk", 11).code(), Code::kIO);
  CHECK(CheckFreeSpace(&fault, "disk", 10).ok());
}

TEST_CASE("OutputRollback takes back the files and folders of a run that did not complete") {
  io::MemEnv env;
  env.SetFile("top/keep.txt", "k");
  {
    OutputRollback rollback(&env);
    REQUIRE(rollback.CreateDirs("top/a/b").ok());
    env.SetFile("top/a/b/w.bin", "w");
    rollback.Committed("top/a/b/w.bin");
  }
  CHECK_FALSE(env.FileExists("top/a/b/w.bin"));
  CHECK_FALSE(env.IsDirectory("top/a"));
  CHECK(env.FileExists("top/keep.txt"));
  {
    OutputRollback rollback(&env);
    REQUIRE(rollback.CreateDirs("top/a").ok());
    env.SetFile("top/a/foreign.txt", "f");  // not the run's: the folder stays
  }
  CHECK(env.FileExists("top/a/foreign.txt"));
  {
    OutputRollback rollback(&env);
    REQUIRE(rollback.CreateDirs("top/c").ok());
    env.SetFile("top/c/w.bin", "w");
    rollback.Committed("top/c/w.bin");
    rollback.Keep();
  }
  CHECK(env.FileExists("top/c/w.bin"));
  {
    OutputRollback rollback(&env);
    REQUIRE(rollback.CreateDirs("top/d").ok());
    env.SetFile("top/d/part.bin", "p");
    rollback.Committed("top/d/part.bin");
    rollback.KeepFiles();
  }
  CHECK(env.FileExists("top/d/part.bin"));
}

}  // namespace
}  // namespace zerofold::output
