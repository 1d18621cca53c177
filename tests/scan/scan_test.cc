#include "scan/scan.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/mem_env.h"
#include "json/reader.h"
#include "json/value.h"
#include "scan/duplicates.h"
#include "scan/json.h"
#include "support/fixtures.h"

namespace zerofold::scan {
namespace {

std::vector<std::string> P(std::initializer_list<const char*> elems) { return {elems.begin(), elems.end()}; }

// Every result of a scan of `paths` over `env`, and its totals.
struct Run {
  std::vector<FileResult> files;
  Totals totals;
  const FileResult& Of(const std::string& path) const {
    for (const FileResult& r : files)
      if (r.path == path) return r;
    FAIL("no result for " << path);
    return files.front();
  }
};

Run ScanAll(Env* env, const std::vector<std::string>& paths, ScanOptions options = {}) {
  Run run;
  Result<Totals> t = Scan(env, paths, options, [&](const FileResult& r) {
    run.files.push_back(r);
    return Status::OK();
  });
  REQUIRE(t.ok());
  run.totals = std::move(t).value();
  return run;
}

// A protocol-0 pickle calling os.system("id"): what pickle.dumps of a
// __reduce__ to os.system writes, as text.
constexpr std::string_view kSystemPickle = "cos\nsystem\n(S'id'\ntR.";

TEST_CASE("scan: the optimizer-state rule") {
  CHECK(IsOptimizerStatePath(P({"optimizer", "state", "0", "exp_avg"})));
  CHECK(IsOptimizerStatePath(P({"optim", "anything"})));
  CHECK(IsOptimizerStatePath(P({"optimizer_state_dict", "fp32_flat_groups", "0"})));
  CHECK(IsOptimizerStatePath(P({"state", "3", "exp_avg_sq"})));                      // opt.state_dict() alone
  CHECK(IsOptimizerStatePath(P({"trainer", "opt", "state", "model", "w", "momentum_buffer"})));  // nested, dotted param
  CHECK(!IsOptimizerStatePath(P({"state", "exp_avg"})));           // no parameter between
  CHECK(!IsOptimizerStatePath(P({"model", "layer", "weight"})));
  CHECK(!IsOptimizerStatePath(P({"model", "state", "0", "weight"})));  // not a state name
  CHECK(!IsOptimizerStatePath(P({"optimizers_x", "w"})));
  CHECK(!IsOptimizerStatePath({}));
}

TEST_CASE("scan: duplicate groups waste every copy but one, largest waste first") {
  DuplicateIndex d;
  d.Add({1, 2}, 100, "a: x");
  d.Add({1, 2}, 100, "b: x");
  d.Add({1, 2}, 100, "c: x");
  d.Add({1, 2}, 50, "a: y");   // same hash, other size: other data
  d.Add({3, 4}, 1000, "a: z");
  d.Add({3, 4}, 1000, "b: z");
  d.Add({5, 6}, 7, "a: alone");
  uint64_t wasted = 0;
  std::vector<DuplicateGroup> g = d.Groups(&wasted);
  REQUIRE(g.size() == 2);
  CHECK(wasted == 1000 + 200);
  CHECK(g[0].nbytes == 1000);
  CHECK(g[0].copies == P({"a: z", "b: z"}));
  CHECK(g[1].copies == P({"a: x", "b: x", "c: x"}));
  CHECK(g[1].wasted() == 200);
  CHECK(g[1].hash.size() == 32);
}

TEST_CASE("scan: every file of a folder gets a verdict, none skipped") {
  io::MemEnv env;
  env.SetFile("t/model.pt", testing::Fixture("torch/views.pt"));
  env.SetFile("t/evil.pkl", kSystemPickle);
  env.SetFile("t/README.md", "# a model\n");
  env.SetFile("t/sub/unsafe.pt", testing::Fixture("bad/unsafe_os_system.pt"));
  std::vector<std::byte> cut = testing::Fixture("torch/views.pt");
  cut.resize(100);
  env.SetFile("t/sub/cut.pt", cut);
  const Run run = ScanAll(&env, {"t"});
  REQUIRE(run.files.size() == 5);
  // Depth first, in name order.
  CHECK(run.files[0].path == "t/README.md");
  CHECK(run.files[1].path == "t/evil.pkl");
  CHECK(run.files[2].path == "t/model.pt");
  CHECK(run.files[3].path == "t/sub/cut.pt");
  CHECK(run.files[4].path == "t/sub/unsafe.pt");
  CHECK(run.Of("t/README.md").verdict == Verdict::kNotCheckpoint);
  CHECK(run.Of("t/evil.pkl").verdict == Verdict::kUnsafe);
  CHECK(run.Of("t/evil.pkl").format == "pickle");
  CHECK(run.Of("t/evil.pkl").unsafe_globals == P({"os.system"}));
  CHECK(run.Of("t/model.pt").verdict == Verdict::kSafe);
  CHECK(run.Of("t/model.pt").format == "torch-zip");
  CHECK(run.Of("t/sub/cut.pt").verdict == Verdict::kCorrupt);
  CHECK(run.Of("t/sub/cut.pt").error.path() == "t/sub/cut.pt");
  CHECK(run.Of("t/sub/unsafe.pt").verdict == Verdict::kUnsafe);
  CHECK(run.totals.files == 5);
  CHECK(run.totals.by_verdict[static_cast<size_t>(Verdict::kUnsafe)] == 2);
  CHECK(run.totals.first_error.code() == Code::kUnsafe);
  CHECK(run.totals.first_error.path() == "t/evil.pkl");
}

TEST_CASE("scan: a pickle is judged by its first pickle, what torch.load unpickles first") {
  io::MemEnv env;
  env.SetFile("evil_then_data", std::string(kSystemPickle) + std::string(5000, '\0'));
  env.SetFile("safe.pkl", "(dp0\nS'a'\np1\nI1\ns.");        // {'a': 1}, protocol 0
  env.SetFile("safe_then_data.bin", "(dp0\nS'a'\np1\nI1\ns.xyz");
  env.SetFile("table.csv", "col1,col2\n1,2\n");          // starts as GLOBAL would
  env.SetFile("(notes)", "(just text)\n");
  const Run run = ScanAll(&env, {"evil_then_data", "safe.pkl", "safe_then_data.bin", "table.csv", "(notes)"});
  REQUIRE(run.files.size() == 5);
  CHECK(run.Of("evil_then_data").verdict == Verdict::kUnsafe);
  CHECK(run.Of("evil_then_data").unsafe_globals == P({"os.system"}));
  CHECK(run.Of("evil_then_data").note == "a pickle of 21 bytes, then 5000 other bytes");
  CHECK(run.Of("safe.pkl").verdict == Verdict::kSafe);
  CHECK(run.Of("safe.pkl").format == "pickle");
  CHECK(run.Of("safe_then_data.bin").verdict == Verdict::kCorrupt);  // named as a checkpoint; torch refuses it
  CHECK(run.Of("table.csv").verdict == Verdict::kNotCheckpoint);
  CHECK(run.Of("(notes)").verdict == Verdict::kNotCheckpoint);
}

TEST_CASE("scan: a DCP folder: .metadata and each data file, checked as merge plans them") {
  const std::string root = std::string(ZF_SOURCE_ROOT) + "/fixtures/dcp/bad/";
  const Run ok = ScanAll(Env::Default(), {root + "control"});
  for (const FileResult& r : ok.files) {
    if (r.path.size() >= 7 && r.path.substr(r.path.size() - 7) == ".distcp") CHECK(r.format == "dcp-data");
    CHECK(r.verdict != Verdict::kUnsafe);
    CHECK(r.verdict != Verdict::kCorrupt);
  }
  // A chunk's own torch.save archive reaching posix.system: that data file is unsafe.
  const Run chunk = ScanAll(Env::Default(), {root + "unsafe_chunk"});
  CHECK(chunk.Of(root + "unsafe_chunk/__1_0.distcp").verdict == Verdict::kUnsafe);
  CHECK(chunk.Of(root + "unsafe_chunk/__0_0.distcp").verdict == Verdict::kSafe);
  CHECK(chunk.Of(root + "unsafe_chunk/.metadata").verdict == Verdict::kSafe);
  // Chunks that overlap: .metadata's fault.
  const Run overlap = ScanAll(Env::Default(), {root + "overlap"});
  CHECK(overlap.Of(root + "overlap/.metadata").verdict == Verdict::kCorrupt);
  // An unsafe .metadata: its data files cannot be read without it, and share its verdict.
  const Run md = ScanAll(Env::Default(), {root + "unsafe_eval"});
  for (const FileResult& r : md.files) CHECK(r.verdict == Verdict::kUnsafe);
}

TEST_CASE("scan: a missing PATH is unreadable, reported, and the scan goes on") {
  io::MemEnv env;
  env.SetFile("a.pt", testing::Fixture("torch/views.pt"));
  const Run run = ScanAll(&env, {"nope.pt", "a.pt"});
  REQUIRE(run.files.size() == 2);
  CHECK(run.files[0].verdict == Verdict::kUnreadable);
  CHECK(run.files[0].error.code() == Code::kNotFound);
  CHECK(run.files[1].verdict == Verdict::kSafe);
}

TEST_CASE("scan: shrink's savings come from shrink's own plan") {
  const Run run = ScanAll(Env::Default(), {std::string(ZF_SOURCE_ROOT) + "/fixtures/torch/views.pt"});
  REQUIRE(run.files.size() == 1);
  // views.pt: storages of 656 bytes whose views reference 252.
  CHECK(run.files[0].stored_bytes == 656);
  CHECK(run.files[0].referenced_bytes == 252);
  REQUIRE(run.files[0].shrink_saves);
  CHECK(*run.files[0].shrink_saves > 0);
  CHECK(run.totals.shrink_saves == *run.files[0].shrink_saves);
}

TEST_CASE("scan --hash: a copy of a file is one group per tensor, ties count once") {
  io::MemEnv env;
  env.SetFile("a/tied.pt", testing::Fixture("torch/tied_weights.pt"));
  env.SetFile("b/tied.pt", testing::Fixture("torch/tied_weights.pt"));
  ScanOptions options;
  options.hash = true;
  const Run run = ScanAll(&env, {"a", "b"}, options);
  REQUIRE(run.files.size() == 2);
  CHECK(run.files[0].hashed);
  CHECK(run.totals.hashed);
  // Each group: one copy in each file (a tie within a file is no copy).
  REQUIRE(!run.totals.duplicates.empty());
  uint64_t wasted = 0;
  for (const DuplicateGroup& g : run.totals.duplicates) {
    CHECK(g.copies.size() == 2);
    CHECK(g.copies[0].rfind("a/tied.pt: ", 0) == 0);
    CHECK(g.copies[1].rfind("b/tied.pt: ", 0) == 0);
    wasted += g.wasted();
  }
  CHECK(wasted == run.totals.duplicate_wasted_bytes);
  // The copy wastes every byte its storages' views reference.
  CHECK(run.totals.duplicate_wasted_bytes == run.files[1].referenced_bytes);
}

TEST_CASE("scan: on_file's error stops the scan") {
  io::MemEnv env;
  env.SetFile("t/a.txt", "a");
  env.SetFile("t/b.txt", "b");
  int calls = 0;
  Result<Totals> t = Scan(&env, {"t"}, {}, [&](const FileResult&) {
    ++calls;
    return Status::Cancelled("stop");
  });
  CHECK(t.status().code() == Code::kCancelled);
  CHECK(calls == 1);
}

TEST_CASE("scan: JSON lines parse and carry the verdict's spelling") {
  FileResult r;
  r.path = "x.pt";
  r.verdict = Verdict::kUnsafe;
  r.format = "torch-zip";
  r.unsafe_globals = {"os.system"};
  r.shrink_saves = 5;
  Result<std::string> line = FileJsonLine(r);
  REQUIRE(line.ok());
  CHECK(line->back() == '\n');
  CHECK(line->find('\n') == line->size() - 1);
  Result<json::Value> v = json::Parse(*line);
  REQUIRE(v.ok());
  CHECK(v->Find("verdict")->string() == "unsafe");
  CHECK(v->Find("shrink_saves_bytes")->AsUint64() == std::optional<uint64_t>(5));
  Totals t;
  t.files = 1;
  t.by_verdict[static_cast<size_t>(Verdict::kNotCheckpoint)] = 1;
  Result<std::string> totals = TotalsJsonLine(t);
  REQUIRE(totals.ok());
  Result<json::Value> tv = json::Parse(*totals);
  REQUIRE(tv.ok());
  CHECK(tv->Find("verdicts")->Find("not a checkpoint")->AsUint64() == std::optional<uint64_t>(1));
}

}  // namespace
}  // namespace zerofold::scan
