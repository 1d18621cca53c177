#include "inspect/inspect.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "inspect/json.h"
#include "io/mem_env.h"
#include "support/fixtures.h"

namespace zerofold::inspect {
namespace {

std::string Fix(const std::string& rel) { return std::string(ZF_SOURCE_ROOT) + "/fixtures/" + rel; }

PathReport One(Env* env, const std::string& path) { return InspectPath(env, path, model::ListOptions()); }

// fixtures/hf/bloated in memory under "hf", with `broken` (a shard's name)
// cut to its first 100 bytes when not empty.
void SetBloated(io::MemEnv* env, const std::string& broken) {
  for (const char* name : {"config.json", "pytorch_model.bin.index.json", "pytorch_model-00001-of-00003.bin",
                           "pytorch_model-00002-of-00003.bin", "pytorch_model-00003-of-00003.bin"}) {
    std::vector<std::byte> bytes = testing::Fixture(std::string("hf/bloated/") + name);
    if (name == broken) bytes.resize(100);
    env->SetFile(std::string("hf/") + name, std::move(bytes));
  }
}

TEST_CASE("inspect: a torch file is one listed file, no folder total") {
  const PathReport p = One(Env::Default(), Fix("torch/views.pt"));
  CHECK(p.kind == Kind::kFile);
  CHECK(p.error.ok());
  REQUIRE(p.files.size() == 1);
  CHECK(p.files[0].path == Fix("torch/views.pt"));
  REQUIRE(p.files[0].listing.ok());
  CHECK(!p.files[0].listing->tensors.empty());
  CHECK(!p.folder);
  CHECK((!p.dcp && !p.megatron && !p.deepspeed));
}

TEST_CASE("inspect: a Hugging Face folder lists each shard, then the folder's total with shrink's size") {
  io::MemEnv env;
  SetBloated(&env, "");
  const PathReport p = One(&env, "hf");
  CHECK(p.kind == Kind::kHfFolder);
  REQUIRE(p.files.size() == 3);
  for (const FileReport& f : p.files) CHECK(f.listing.ok());
  CHECK(p.files[1].path == "hf/pytorch_model-00002-of-00003.bin");
  REQUIRE(p.folder);
  CHECK(p.folder->files == 3);
  REQUIRE(p.folder->shrunk_file_bytes);
  CHECK(*p.folder->shrunk_file_bytes < p.folder->file_bytes);
}

TEST_CASE("inspect: a shard that fails is its own error; the others are listed, the total has no shrink size") {
  io::MemEnv env;
  SetBloated(&env, "pytorch_model-00002-of-00003.bin");
  Report report;
  report.paths.push_back(One(&env, "hf"));
  const PathReport& p = report.paths[0];
  CHECK(p.kind == Kind::kHfFolder);
  CHECK(p.error.ok());
  REQUIRE(p.files.size() == 3);
  CHECK(p.files[0].listing.ok());
  REQUIRE(!p.files[1].listing.ok());
  CHECK(p.files[1].listing.status().path() == "hf/pytorch_model-00002-of-00003.bin");
  CHECK(p.files[2].listing.ok());
  REQUIRE(p.folder);
  CHECK(p.folder->files == 3);
  CHECK(!p.folder->shrunk_file_bytes);
  CHECK(report.FirstError().path() == "hf/pytorch_model-00002-of-00003.bin");
}

TEST_CASE("inspect: a DCP folder is kDcp") {
  const PathReport p = One(Env::Default(), Fix("dcp/accelerate_ws4/ckpt"));
  CHECK(p.kind == Kind::kDcp);
  CHECK(p.error.ok());
  REQUIRE(p.dcp);
  CHECK(!p.dcp->tensors.empty());
  CHECK((!p.megatron && !p.deepspeed && p.files.empty() && !p.folder));
}

TEST_CASE("inspect: a Megatron torch_dist folder is kMegatron, though it is a DCP folder too") {
  const PathReport p = One(Env::Default(), Fix("megatron/gpt_tp2pp2_mlm/ckpt"));
  CHECK(p.kind == Kind::kMegatron);
  CHECK(p.error.ok());
  REQUIRE(p.megatron);
  CHECK(!p.megatron->listing.tensors.empty());
  CHECK((!p.dcp && !p.deepspeed && p.files.empty()));
}

TEST_CASE("inspect: a Megatron folder whose .metadata is unsafe fails as a Megatron folder") {
  const PathReport p = One(Env::Default(), Fix("megatron/bad/plans_eval"));
  CHECK(p.kind == Kind::kMegatron);
  CHECK(p.error.code() == Code::kUnsafe);
  CHECK((!p.megatron && !p.dcp));
}

TEST_CASE("inspect: a DeepSpeed folder is kDeepSpeed, described with what merge would do") {
  const PathReport ok = One(Env::Default(), Fix("deepspeed/zero2_ws3_bf16/ckpt"));
  CHECK(ok.kind == Kind::kDeepSpeed);
  REQUIRE(ok.deepspeed);
  CHECK(ok.deepspeed->stage == 2);
  CHECK(ok.deepspeed->mergeable);

  // A checkpoint merge refuses is still described, not failed.
  const PathReport refused = One(Env::Default(), Fix("deepspeed/derived_refuse_tp2/ckpt"));
  CHECK(refused.kind == Kind::kDeepSpeed);
  CHECK(refused.error.ok());
  REQUIRE(refused.deepspeed);
  CHECK(!refused.deepspeed->mergeable);
  CHECK(refused.deepspeed->refusal.code() == Code::kUnsupported);
}

TEST_CASE("inspect: a DeepSpeed folder whose `latest` names no tag fails as a DeepSpeed folder") {
  io::MemEnv env;
  env.SetFile("ds/latest", std::string_view("nope"));
  const PathReport p = One(&env, "ds");
  CHECK(p.kind == Kind::kDeepSpeed);
  CHECK(p.error.code() == Code::kNotFound);
  CHECK(p.error.message().find("'latest' names tag 'nope'") != std::string::npos);
  CHECK(!p.deepspeed);
}

TEST_CASE("inspect: a path of no kind is kUnknown with the resolver's error") {
  io::MemEnv env;
  env.SetFile("empty/notes.txt", std::string_view("hi"));
  const PathReport missing = One(&env, "missing.pt");
  CHECK(missing.kind == Kind::kUnknown);
  CHECK(missing.error.code() == Code::kNotFound);
  const PathReport folder = One(&env, "empty");
  CHECK(folder.kind == Kind::kUnknown);
  CHECK(folder.error.code() == Code::kNotFound);
  CHECK(folder.files.empty());
}

TEST_CASE("inspect: Inspect reports every path in order, each to on_path as it is made") {
  io::MemEnv env;
  SetBloated(&env, "");
  env.SetFile("ds/latest", std::string_view("nope"));
  std::vector<std::string> seen;
  const Report report = Inspect(&env, {"missing.pt", "hf", "ds"}, model::ListOptions(),
                                [&seen](const PathReport& p) { seen.push_back(p.path); });
  CHECK(seen == std::vector<std::string>{"missing.pt", "hf", "ds"});
  REQUIRE(report.paths.size() == 3);
  std::vector<Code> errors;
  report.ForEachError([&errors](const Status& s) { errors.push_back(s.code()); });
  CHECK(errors == std::vector<Code>{Code::kNotFound, Code::kNotFound});
  CHECK(report.FirstError().path() == "missing.pt");
  CHECK(Inspect(&env, {"hf"}, model::ListOptions()).FirstError().ok());
}

TEST_CASE("inspect: the limits reach the readers") {
  model::ListOptions options;
  options.torch.pickle.max_depth = 3;
  const PathReport p = InspectPath(Env::Default(), Fix("torch/views.pt"), options);
  REQUIRE(p.files.size() == 1);
  CHECK(p.files[0].listing.status().code() == Code::kLimit);
}

TEST_CASE("inspect: ReportJson writes each path's elements in order, the folders' totals after") {
  io::MemEnv env;
  SetBloated(&env, "pytorch_model-00002-of-00003.bin");
  env.SetFile("ds/latest", std::string_view("nope"));
  const Report report = Inspect(&env, {"ds", "hf"}, model::ListOptions());
  Result<std::string> doc = ReportJson(report);
  REQUIRE(doc.ok());
  const std::string& d = *doc;
  CHECK(d.rfind("{\"files\":[{\"path\":\"ds\",\"error\":{\"code\":\"not found\"", 0) == 0);
  const size_t first = d.find("{\"path\":\"hf/pytorch_model-00001-of-00003.bin\",\"format\":");
  const size_t second = d.find("{\"path\":\"hf/pytorch_model-00002-of-00003.bin\",\"error\":");
  const size_t third = d.find("{\"path\":\"hf/pytorch_model-00003-of-00003.bin\",\"format\":");
  const size_t folders = d.find("],\"folders\":[{\"path\":\"hf\",\"files\":3,");
  CHECK(first != std::string::npos);
  CHECK(second > first);
  CHECK(third > second);
  CHECK(folders > third);
  CHECK(folders != std::string::npos);
  CHECK(d.back() == '\n');

  Result<std::string> ds = ReportJson(Inspect(Env::Default(), {Fix("deepspeed/zero2_ws3_bf16/ckpt")}, {}));
  REQUIRE(ds.ok());
  CHECK(ds->find("\"format\":\"deepspeed\",\"deepspeed\":{\"layout\":\"zero\",") != std::string::npos);
  CHECK(ds->find("\"folders\"") == std::string::npos);
}

}  // namespace
}  // namespace zerofold::inspect

namespace zerofold::inspect {
namespace {

TEST_CASE("inspect: a Hugging Face folder names the entries it did not read") {
  io::MemEnv env;
  SetBloated(&env, "");
  env.SetFile("hf/evil.pkl", "cos\nsystem\n(S'id'\ntR.");
  env.SetFile("hf/extra/notes.txt", "x");
  const PathReport p = One(&env, "hf");
  REQUIRE(p.kind == Kind::kHfFolder);
  REQUIRE(p.folder);
  CHECK(p.folder->unread == std::vector<std::string>{"hf/config.json", "hf/evil.pkl", "hf/extra/"});
  Result<std::string> doc = ReportJson(Inspect(&env, {"hf"}, model::ListOptions()));
  REQUIRE(doc.ok());
  CHECK(doc->find("\"hf/evil.pkl\"") != std::string::npos);
}

}  // namespace
}  // namespace zerofold::inspect
