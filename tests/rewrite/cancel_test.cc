// Cancellation (io/cancel_env.h) and failure at any moment of every output
// form: a file, a compressed stream, a folder shrunk, safetensors shards
// with an index and copied config, torch shards, a merge into shards, and
// a --part run. Each job runs over MemEnv through a CancelEnv; the flag is
// set at the k-th progress report, or the k-th read fails (FaultEnv).
// Afterwards the call has failed (kCancelled for the flag) and the files are
// exactly those before the call: no temp file, no shard without its index,
// no copied config. A part keeps only complete files (each equal to the
// one-run output's file of that name).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rewrite/request.h"
#include "io/cancel_env.h"
#include "io/fault_env.h"
#include "io/mem_env.h"
#include "merge/merge.h"
#include "support/fixtures.h"

namespace zerofold::rewrite {
namespace {

using Files = std::map<std::string, std::vector<std::byte>>;

Files Snapshot(const io::MemEnv& mem) {
  Files out;
  for (const std::string& f : mem.Files()) out[f] = mem.GetFile(f).value();
  return out;
}

// Copies the fixture folder `rel` (and its folders) to `to` in `mem`.
void LoadTree(io::MemEnv& mem, const std::string& rel, const std::string& to) {
  const std::string root = std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel;
  Result<std::vector<DirEntry>> entries = Env::Default()->ListDir(root);
  REQUIRE(entries.ok());
  for (const DirEntry& e : *entries) {
    if (e.is_dir) LoadTree(mem, rel + "/" + e.name, to + "/" + e.name);
    else mem.SetFile(to + "/" + e.name, testing::Fixture(rel + "/" + e.name));
  }
}

std::string Why(int) { return "cancelled by the test"; }

// One job: run it on `env`, calling `progress` at each progress report.
struct Form {
  std::string name;
  std::function<void(io::MemEnv&)> setup;
  std::function<Status(Env*, const std::function<void()>&)> run;
  bool part = false;  // a --part run: complete files stay
};

Status Shrink(Env* env, const std::function<void()>& progress, ShrinkRequest r) {
  r.options.buffer_bytes = 4096;
  r.options.progress = [&](const output::SetProgress&) { progress(); };
  ZF_TRY(CheckShrinkRequest(env, r, kOptionWords));
  return RunShrink(env, r).status();
}

ShrinkRequest Request(const std::string& in, const std::string& out) {
  ShrinkRequest r;
  r.convert = true;
  r.in = in;
  r.out = out;
  return r;
}

std::vector<Form> Forms() {
  auto bloated = [](io::MemEnv& mem) { LoadTree(mem, "hf/bloated", "in"); };
  auto file = [](io::MemEnv& mem) {
    mem.SetFile("in.pt", testing::Fixture("hf/bloated/pytorch_model-00001-of-00003.bin"));
  };
  std::vector<Form> forms;
  forms.push_back({"file", file, [](Env* env, const std::function<void()>& p) {
                     ShrinkRequest r = Request("in.pt", "out.pt");
                     r.convert = false;
                     return Shrink(env, p, r);
                   }});
  forms.push_back({"zstd stream", file, [](Env* env, const std::function<void()>& p) {
                     return Shrink(env, p, Request("in.pt", "out.pt.zst"));
                   }});
  forms.push_back({"folder shrunk", bloated, [](Env* env, const std::function<void()>& p) {
                     ShrinkRequest r = Request("in", "out/");
                     r.convert = false;
                     return Shrink(env, p, r);
                   }});
  forms.push_back({"safetensors shards", bloated, [](Env* env, const std::function<void()>& p) {
                     ShrinkRequest r = Request("in", "out/");
                     r.to = output::ShardFormat::kSafetensors;
                     r.max_shard_bytes = 6000;
                     return Shrink(env, p, r);
                   }});
  forms.push_back({"torch shards", file, [](Env* env, const std::function<void()>& p) {
                     ShrinkRequest r = Request("in.pt", "out/");
                     r.to = output::ShardFormat::kTorch;
                     r.max_shard_bytes = 3000;
                     return Shrink(env, p, r);
                   }});
  forms.push_back({"merge shards", [](io::MemEnv& mem) { LoadTree(mem, "deepspeed/zero2_ws3_bf16/ckpt", "ckpt"); },
                   [](Env* env, const std::function<void()>& p) {
                     merge::MergeOptions o;
                     o.max_shard_bytes = 20000;
                     o.buffer_bytes = 4096;
                     o.progress = [&](const char*, uint64_t, uint64_t) { p(); };
                     return merge::MergeCheckpoint(env, "ckpt", "out/", o).status();
                   }});
  forms.push_back({"part 0/2", bloated,
                   [](Env* env, const std::function<void()>& p) {
                     ShrinkRequest r = Request("in", "out/");
                     r.to = output::ShardFormat::kSafetensors;
                     r.max_shard_bytes = 6000;
                     r.part = output::ParsePart("0/2").value();
                     return Shrink(env, p, r);
                   },
                   true});
  return forms;
}

// About 40 points of 1..n, both ends included.
std::vector<uint64_t> Points(uint64_t n) {
  std::vector<uint64_t> out;
  const uint64_t step = std::max<uint64_t>(1, n / 40);
  for (uint64_t k = 1; k <= n; k += step) out.push_back(k);
  if (out.empty() || out.back() != n) out.push_back(n);
  return out;
}

// The files after a stopped run: those before, and for a part only
// complete files of the one-run output.
void CheckLeftAlone(const Form& form, const Files& before, const Files& after, const Files& complete) {
  for (const auto& [path, bytes] : after) {
    CAPTURE(path);
    auto old = before.find(path);
    if (old != before.end()) {
      CHECK(old->second == bytes);
      continue;
    }
    REQUIRE(form.part);
    auto whole = complete.find(path);
    REQUIRE(whole != complete.end());
    CHECK(whole->second == bytes);
  }
  for (const auto& [path, bytes] : before) CHECK(after.count(path) == 1);
}

TEST_CASE("a run cancelled or failing at any moment leaves the files as they were") {
  for (const Form& form : Forms()) {
    CAPTURE(form.name);
    // The clean run: its progress reports, reads and files.
    io::MemEnv clean;
    form.setup(clean);
    const Files before = Snapshot(clean);
    io::CancelFlag never{0};
    io::FaultEnv counting(&clean);
    io::CancelEnv clean_env(&counting, &never, Why);
    uint64_t reports = 0;
    REQUIRE(form.run(&clean_env, [&] { ++reports; }).ok());
    const Files complete = Snapshot(clean);
    REQUIRE(complete.size() > before.size());
    REQUIRE(reports > 0);
    const uint64_t reads = counting.reads();

    for (uint64_t k : Points(reports)) {
      CAPTURE(k);
      io::MemEnv mem;
      form.setup(mem);
      io::CancelFlag flag{0};
      io::CancelEnv env(&mem, &flag, Why);
      uint64_t seen = 0;
      Status s = form.run(&env, [&] {
        if (++seen == k) flag = 1;
      });
      REQUIRE_FALSE(s.ok());
      CHECK_EQ(s.code(), Code::kCancelled);
      CHECK_EQ(s.message(), "cancelled by the test");
      CheckLeftAlone(form, before, Snapshot(mem), complete);
    }
    for (uint64_t n : Points(reads)) {
      CAPTURE(n);
      io::MemEnv mem;
      form.setup(mem);
      io::FaultEnv fault(&mem);
      fault.FailRead(n);
      Status s = form.run(&fault, [] {});
      REQUIRE_FALSE(s.ok());
      CheckLeftAlone(form, before, Snapshot(mem), complete);
    }
  }
}

TEST_CASE("a cancelled commit leaves the target as it was; an open after the flag is refused") {
  io::MemEnv mem;
  mem.SetFile("a", testing::Text("old"));
  io::CancelFlag flag{0};
  io::CancelEnv env(&mem, &flag, Why);
  {
    std::unique_ptr<AtomicFileSink> sink = env.NewAtomicFile("a").value();
    REQUIRE(sink->Append(testing::Text("new")).ok());
    flag = 7;
    Status s = sink->Commit();
    CHECK_EQ(s.code(), Code::kCancelled);
    CHECK_EQ(s.path(), "a");
  }
  CHECK(mem.GetFile("a").value() == testing::Text("old"));
  CHECK_EQ(mem.Files(), std::vector<std::string>{"a"});
  CHECK_EQ(env.OpenRandom("a").status().code(), Code::kCancelled);
  CHECK_EQ(env.NewAtomicFile("b").status().code(), Code::kCancelled);
  CHECK(env.FileExists("a"));  // looking is not stopped; the unwinding uses it
  CHECK(env.RemoveFile("a").ok());
}

}  // namespace
}  // namespace zerofold::rewrite
