// Random corruptions of valid archives, as a fuzzer would make them: every
// result is a value or a clean error, and accepted archives keep the
// reader's promises (entries inside the file, disjoint).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "test_util.h"
#include "zip/archive.h"
#include "zip/stream_reader.h"

namespace zerofold::zip {
namespace {

bool AllowedError(Code code) {
  return code == Code::kCorrupt || code == Code::kUnsupported || code == Code::kLimit ||
         code == Code::kAmbiguous;
}

std::vector<std::byte> Mutate(const std::vector<std::byte>& base, std::mt19937_64& rng) {
  std::vector<std::byte> b = base;
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // Most structure sits in the last few hundred bytes (central directory,
  // end records); aim half of the changes there.
  auto position = [&](size_t width) {
    const size_t span = b.size() - width;
    if (rng() % 2 == 0) return pick(span + 1);
    const size_t tail = std::min<size_t>(span, 400);
    return span - pick(tail + 1);
  };
  switch (pick(5)) {
    case 0:
      for (size_t i = 0, n = 1 + pick(4); i < n; ++i) b[position(1)] ^= std::byte(1u << pick(8));
      break;
    case 1: {
      static constexpr uint32_t kValues[] = {0, 1, 0xFFFF, 0xFFFFFFFF, 0x7FFFFFFF, 46, 0x10000};
      io::EncodeU32le(b.data() + position(4), kValues[pick(std::size(kValues))]);
      break;
    }
    case 2:
      io::EncodeU16le(b.data() + position(2), static_cast<uint16_t>(rng()));
      break;
    case 3:
      b.resize(pick(b.size()));
      break;
    default: {
      const size_t at = position(1);
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), 1 + pick(8), std::byte(pick(256)));
      break;
    }
  }
  return b;
}

void CheckArchiveResult(const std::vector<std::byte>& b) {
  Result<Archive> a = testing::ReadLocatedArchiveBytes(b);
  if (!a.ok()) {
    REQUIRE_MESSAGE(AllowedError(a.status().code()), a.status().ToString());
    REQUIRE_FALSE(a.status().message().empty());
    return;
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const Entry& e : a->entries) {
    REQUIRE_LE(e.data_offset, b.size());
    REQUIRE_LE(e.size, b.size() - e.data_offset);
    REQUIRE_LT(e.header_offset, e.data_offset);
    spans.emplace_back(e.header_offset, e.data_offset + e.size);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) REQUIRE_LE(spans[i - 1].second, spans[i].first);
}

void CheckStreamResult(const std::vector<std::byte>& b, bool read_all) {
  io::MemStreamSource src("mutated", b, 5);
  StreamReader r(&src);
  Status st = [&]() -> Status {
    while (true) {
      ZF_ASSIGN_OR_RETURN(const StreamEntry* e, r.Next());
      if (e == nullptr) break;
      if (read_all) ZF_TRY(r.ReadAll(1 << 20).status());
    }
    return r.Finish();
  }();
  if (!st.ok()) REQUIRE_MESSAGE(AllowedError(st.code()), st.ToString());
}

TEST_CASE("random corruptions give values or clean errors") {
  const std::vector<std::byte> bases[] = {
      testing::BuildSmall().bytes,
      testing::ReadFileBytes(testing::SourceRoot() + "/fixtures/zip/python_rewrite.pt"),
      testing::ReadFileBytes(testing::SourceRoot() + "/fixtures/zip/torch_small.pt"),
  };
  std::mt19937_64 rng(20240601);
  for (const std::vector<std::byte>& base : bases) {
    for (int i = 0; i < 1500; ++i) {
      const std::vector<std::byte> b = Mutate(base, rng);
      CAPTURE(i);
      CheckArchiveResult(b);
      CheckStreamResult(b, i % 2 == 0);
    }
  }
}

}  // namespace
}  // namespace zerofold::zip
