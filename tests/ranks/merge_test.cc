// The per-rank DTensor planner over the real fixtures (fixtures/ranks/),
// and merge's failures on them: every failure names a file and leaves no
// output.
#include "ranks/merge.h"

#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "merge/merge.h"
#include "ranks/folder.h"

namespace zerofold::ranks {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const char* name) { return std::string(ZF_SOURCE_ROOT) + "/fixtures/ranks/" + name; }

RankFolder Folder(const char* name) {
  Result<std::optional<RankFolder>> f = FindRankFolder(Env::Default(), Fixture(name));
  REQUIRE(f.ok());
  REQUIRE(f->has_value());
  return **f;
}

const gather::GatherTensor& TensorNamed(const gather::GatherPlan& plan, const std::string& name) {
  for (const gather::GatherTensor& t : plan.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return plan.tensors[0];
}

TEST_CASE("PlanRankMerge: one piece per distinct box, copies hashed, dtypes as saved") {
  RankFolder folder = Folder("fsdp2_w4");
  CHECK_EQ(folder.world, 4);
  CHECK_EQ(folder.strategy, "fsdp2");
  Result<PlannedMerge> m = PlanRankMerge(Env::Default(), folder, MergeOptions{});
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK_EQ(m->gather.tensors.size(), 13u);
  CHECK_EQ(m->summary.dtensors, 10u);
  CHECK_EQ(m->summary.plain, 3u);
  CHECK_EQ(m->summary.replicated_checked, 9u);  // 3 buffers x 3 ranks after rank 0
  // 5 rows over 4 ranks: 2, 2, 1 and an empty shard (no piece).
  const gather::GatherTensor& w = TensorNamed(m->gather, "a.proj.weight");
  REQUIRE_EQ(w.pieces.size(), 3u);
  CHECK_EQ(w.pieces[2].offsets, std::vector<int64_t>{4, 0});
  CHECK_EQ(w.pieces[2].sizes, std::vector<int64_t>{1, 4});
  CHECK_EQ(w.pieces[2].file, 2u);
  CHECK(TensorNamed(m->gather, "b.proj.weight").dtype == torch::DType::kBFloat16);
  CHECK(TensorNamed(m->gather, "steps").dtype == torch::DType::kInt64);
  MergeOptions cast;
  cast.dtype = torch::DType::kFloat16;
  Result<PlannedMerge> c = PlanRankMerge(Env::Default(), folder, cast);
  REQUIRE(c.ok());
  CHECK(TensorNamed(c->gather, "b.proj.weight").dtype == torch::DType::kFloat16);
  CHECK(TensorNamed(c->gather, "steps").dtype == torch::DType::kInt64);
}

TEST_CASE("PlanRankMerge: HSDP replicas are one piece each, checked") {
  Result<PlannedMerge> m = PlanRankMerge(Env::Default(), Folder("hsdp_2x2"), MergeOptions{});
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK_EQ(TensorNamed(m->gather, "embed.weight").pieces.size(), 2u);
  CHECK_EQ(m->summary.meshes, std::vector<std::string>{"(2, 2) dp_replicate, dp_shard"});
}

TEST_CASE("PlanRankMerge: optimizer state named after the model's params") {
  MergeOptions o;
  o.select = "optimizer";
  Result<PlannedMerge> m = PlanRankMerge(Env::Default(), Folder("fsdp2_w2"), o);
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK(m->summary.optimizer_names_mapped);
  CHECK_EQ(m->gather.tensors.size(), 30u);
  CHECK_EQ(TensorNamed(m->gather, "state.a.proj.weight.exp_avg").shape, std::vector<int64_t>{5, 4});
  o.select = "lr_scheduler";
  CHECK_EQ(PlanRankMerge(Env::Default(), Folder("fsdp2_w2"), o).status().code(), Code::kInvalidArgument);
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "zf_ranks_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST_CASE("merge of a rank folder: a failed read or commit names a file and leaves no output") {
  io::FaultEnv env(Env::Default());
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  merge::MergeOptions options;
  options.buffer_bytes = 4096;
  REQUIRE(merge::MergeCheckpoint(&env, Fixture("hsdp_2x2"), out, options).ok());
  const uint64_t reads = env.reads(), commits = env.commits();
  REQUIRE_GE(commits, 4u);  // the weights, config.json, generation_config.json, tokenizer_config.json
  fs::remove_all(out);
  for (uint64_t n : {uint64_t{1}, reads / 3, reads / 2, reads}) {
    CAPTURE(n);
    env.Reset();
    env.FailRead(n);
    Status s = merge::MergeCheckpoint(&env, Fixture("hsdp_2x2"), out, options).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_FALSE(s.path().empty());
    CHECK_FALSE(fs::exists(out));
  }
  for (uint64_t n = 1; n <= commits; ++n) {
    CAPTURE(n);
    env.Reset();
    env.FailCommit(n);
    Status s = merge::MergeCheckpoint(&env, Fixture("hsdp_2x2"), out, options).status();
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_FALSE(fs::exists(out));
  }
}

}  // namespace
}  // namespace zerofold::ranks
