#include "output/parts.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem_env.h"

namespace zerofold::output {
namespace {

TEST_CASE("parts: --part parses 0-based I/N and finish, refuses the rest") {
  Result<PartSpec> p = ParsePart("0/3");
  REQUIRE(p.ok());
  CHECK(p->kind == PartSpec::Kind::kPart);
  CHECK(p->index == 0);
  CHECK(p->count == 3);
  p = ParsePart("2/3");
  REQUIRE(p.ok());
  CHECK(p->index == 2);
  p = ParsePart("0/1");
  REQUIRE(p.ok());
  CHECK(p->count == 1);
  p = ParsePart("finish");
  REQUIRE(p.ok());
  CHECK(p->kind == PartSpec::Kind::kFinish);
  for (const char* bad : {"3/3", "1/0", "0/0", "-1/2", "1", "a/2", "1/2x", "/2", "1/", "", "Finish", "4294967296/2"}) {
    CAPTURE(bad);
    CHECK(ParsePart(bad).status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("parts: largest file first onto the least loaded part, ties by index") {
  // 10 -> p0, 8 -> p1, 7 -> p2, 5 -> p2 (loads 10, 8, 7), 3 -> p1 (loads 10, 8, 12).
  CHECK(AssignParts({5, 10, 7, 8, 3}, 3) == std::vector<uint32_t>{2, 0, 2, 1, 1});
  // Equal sizes: file order, round robin over the parts.
  CHECK(AssignParts({4, 4, 4, 4, 4}, 2) == std::vector<uint32_t>{0, 1, 0, 1, 0});
  // One part takes everything; more parts than files leave parts empty.
  CHECK(AssignParts({1, 2, 3}, 1) == std::vector<uint32_t>{0, 0, 0});
  CHECK(AssignParts({9, 1}, 4) == std::vector<uint32_t>{0, 1});
  CHECK(AssignParts({}, 3).empty());
}

TEST_CASE("parts: the heaviest part holds at most the mean plus the largest file") {
  std::vector<uint64_t> sizes;
  uint64_t x = 12345, total = 0, largest = 0;
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sizes.push_back((x >> 33) % 5000 + 1);
    total += sizes.back();
    largest = std::max(largest, sizes.back());
  }
  for (uint32_t n : {2u, 3u, 7u, 16u}) {
    std::vector<uint32_t> part = AssignParts(sizes, n);
    std::vector<uint64_t> load(n, 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      REQUIRE(part[i] < n);
      load[part[i]] += sizes[i];
    }
    uint64_t heaviest = *std::max_element(load.begin(), load.end());
    CHECK(heaviest <= total / n + largest);
    CHECK(part == AssignParts(sizes, n));  // deterministic
  }
}

// Four planned files of 10, 8, 7 and 5 bytes: parts 0, 1, 1, 0 of 2.
PartFiles FourFiles() {
  PartFiles f;
  f.paths = {"out/a", "out/b", "out/c", "out/d"};
  f.bytes = {10, 8, 7, 5};
  return f;
}

TEST_CASE("parts: SelectPartFiles writes the part's files, skipping those complete") {
  io::MemEnv env;
  PartFiles f = FourFiles();
  REQUIRE(SelectPartFiles(&env, {PartSpec::Kind::kAll, 0, 1}, false, false, f).ok());
  CHECK(f.write == std::vector<bool>{true, true, true, true});
  CHECK(f.file_parts.empty());

  REQUIRE(SelectPartFiles(&env, {PartSpec::Kind::kPart, 1, 2}, false, false, f).ok());
  CHECK(f.file_parts == std::vector<uint32_t>{0, 1, 1, 0});
  CHECK(f.write == std::vector<bool>{false, true, true, false});
  CHECK(f.skipped.empty());

  env.SetFile("out/b", std::string(8, 'x'));  // complete
  env.SetFile("out/a", std::string(3, 'x'));  // another part's, of another size: not this part's concern
  REQUIRE(SelectPartFiles(&env, {PartSpec::Kind::kPart, 1, 2}, false, false, f).ok());
  CHECK(f.write == std::vector<bool>{false, false, true, false});
  CHECK(f.skipped == std::vector<std::string>{"out/b"});
  // force rewrites every file of the part.
  REQUIRE(SelectPartFiles(&env, {PartSpec::Kind::kPart, 1, 2}, true, false, f).ok());
  CHECK(f.write == std::vector<bool>{false, true, true, false});
  CHECK(f.skipped.empty());

  env.SetFile("out/c", std::string(6, 'x'));  // the part's, one byte short
  Status s = SelectPartFiles(&env, {PartSpec::Kind::kPart, 1, 2}, false, false, f);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.path() == "out/c");
  CHECK(s.message() ==
        "exists with 6 bytes, not the 7 this plan gives it (a file of another save, or of other flags); rerun this "
        "part with --force to rewrite its files");
}

TEST_CASE("parts: SelectPartFiles for finish writes nothing and checks every file") {
  io::MemEnv env;
  PartFiles f = FourFiles();
  const PartSpec finish{PartSpec::Kind::kFinish, 0, 1};
  Status s = SelectPartFiles(&env, finish, false, false, f);
  CHECK(s.code() == Code::kCorrupt);
  CHECK(s.path() == "out/a");
  CHECK(SelectPartFiles(&env, finish, false, /*dry_run=*/true, f).ok());
  CHECK(f.write == std::vector<bool>{false, false, false, false});
  env.SetFile("out/a", std::string(10, 'x'));
  env.SetFile("out/b", std::string(8, 'x'));
  env.SetFile("out/c", std::string(7, 'x'));
  env.SetFile("out/d", std::string(4, 'x'));
  // Another size: another plan, most likely finish given other flags.
  s = SelectPartFiles(&env, finish, false, false, f);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.path() == "out/d");
  CHECK(s.message() ==
        "exists with 4 bytes, not the 5 this plan gives it: planned with other flags? run finish with the flags of "
        "the parts (or rerun the part that writes it with --force)");
  env.SetFile("out/d", std::string(5, 'x'));
  CHECK(SelectPartFiles(&env, finish, false, false, f).ok());
  CHECK(f.write == std::vector<bool>{false, false, false, false});
}

TEST_CASE("parts: finish names other flags when the folder holds weights of another plan") {
  io::MemEnv env;
  PartFiles f;
  f.paths = {"out/model-00001-of-00002.safetensors", "out/model-00002-of-00002.safetensors"};
  f.bytes = {3, 3};
  env.SetFile("out/model-00001-of-00003.safetensors", "xxx");  // the parts' plan had 3 shards
  Status s = SelectPartFiles(&env, {PartSpec::Kind::kFinish, 0, 1}, false, false, f);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.ToString() ==
        "out/model-00001-of-00002.safetensors: invalid argument: is missing, and the folder holds "
        "model-00001-of-00003.safetensors, which this plan does not write: planned with other flags? run finish "
        "with the flags of the parts");
}

}  // namespace
}  // namespace zerofold::output
