#include "pickle/encoder.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph_text.h"
#include "pickle/decoder.h"

namespace zerofold::pickle {
namespace {

using namespace std::string_literals;
using testing::Bytes;
using testing::FixtureStems;
using testing::GraphText;
using testing::ReadFile;

std::string AsString(const std::vector<std::byte>& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

TEST_CASE("decode then encode gives back every CPython protocol-2 pickle byte for byte") {
  std::vector<std::string> stems = FixtureStems("torch");
  for (const std::string& s : FixtureStems("roundtrip")) stems.push_back(s);
  stems.push_back(std::string(ZF_SOURCE_ROOT) + "/fixtures/pickle/protocols/p2");
  REQUIRE(stems.size() > 30);
  for (const std::string& stem : stems) {
    CAPTURE(stem);
    std::vector<std::byte> bytes = ReadFile(stem + ".pkl");
    Result<Decoded> d = Decode(bytes, 0);
    REQUIRE(d.ok());
    Result<std::vector<std::byte>> e = Encode(d->graph, d->root);
    REQUIRE_MESSAGE(e.ok(), e.status().ToString());
    if (*e != bytes) {
      size_t at = 0;
      while (at < e->size() && at < bytes.size() && (*e)[at] == bytes[at]) ++at;
      CAPTURE(at);
      CHECK_EQ(e->size(), bytes.size());
      FAIL("encoded bytes differ");
    }
  }
}

TEST_CASE("protocol 0 and 1 pickles re-encode at protocol 2 to the same graph") {
  for (int p : {0, 1}) {
    CAPTURE(p);
    std::vector<std::byte> bytes =
        ReadFile(std::string(ZF_SOURCE_ROOT) + "/fixtures/pickle/protocols/p" + std::to_string(p) + ".pkl");
    Result<Decoded> d = Decode(bytes, 0);
    REQUIRE(d.ok());
    Result<std::vector<std::byte>> e = Encode(d->graph, d->root);
    REQUIRE(e.ok());
    Result<Decoded> again = Decode(*e, 0);
    REQUIRE(again.ok());
    CHECK_EQ(again->protocol, 2);
    CHECK_EQ(GraphText(again->graph, again->root), GraphText(d->graph, d->root));
  }
}

struct IntCase {
  int64_t value;
  std::string bytes;  // between PROTO 2 and STOP
};

TEST_CASE("integers take the smallest opcode, as CPython's save_long") {
  const IntCase cases[] = {
      {0, "K\x00"s},
      {255, "K\xff"},
      {256, "M\x00\x01"s},
      {65535, "M\xff\xff"},
      {65536, "J\x00\x00\x01\x00"s},
      {-1, "J\xff\xff\xff\xff"},
      {INT32_MAX, "J\xff\xff\xff\x7f"},
      {INT32_MIN, "J\x00\x00\x00\x80"s},
      {int64_t{1} << 31, "\x8a\x05\x00\x00\x00\x80\x00"s},
      {int64_t{INT32_MIN} - 1, "\x8a\x05\xff\xff\xff\x7f\xff"s},
      {INT64_MAX, "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"},
      {INT64_MIN, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"s},
  };
  for (const IntCase& c : cases) {
    CAPTURE(c.value);
    Graph g;
    NodeId n = g.AddInt(c.value);
    Result<std::vector<std::byte>> e = Encode(g, n);
    REQUIRE(e.ok());
    CHECK_EQ(AsString(*e), "\x80\x02" + c.bytes + ".");
  }
  // A big int with redundant sign bytes is written in its shortest form,
  // and one that fits in int64 as an int.
  Graph g;
  NodeId big = g.AddBigInt("\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"s);  // 2^64
  NodeId small = g.AddBigInt("\x05\x00\x00"s);
  NodeId both[] = {big, small};
  NodeId list = g.AddSequence(Kind::kList, both);
  Result<std::vector<std::byte>> e = Encode(g, list);
  REQUIRE(e.ok());
  CHECK_EQ(AsString(*e), "\x80\x02]q\x00(\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01K\x05" "e."s);
}

TEST_CASE("values protocol 2 cannot write as they are give kInvalidArgument") {
  Graph g;
  NodeId bytes = g.AddBytes("ab");
  NodeId bytearray = g.AddBytes("ab", Kind::kByteArray);
  NodeId set = g.AddSequence(Kind::kSet, {});
  NodeId frozen = g.AddSequence(Kind::kFrozenSet, {});
  NodeId cls = g.AddGlobal("m", "C");
  NodeId args = g.AddSequence(Kind::kTuple, {});
  ObjectData ex;
  ex.op = ObjectOp::kNewObjEx;
  ex.callable = cls;
  ex.args = args;
  ex.kwargs = g.AddDict();
  NodeId newobj_ex = g.AddObject(ex);
  NodeId bad_global = g.AddGlobal("m\nx", "C");
  ObjectData dangling;
  dangling.callable = cls;
  dangling.args = 12345;
  NodeId bad_object = g.AddObject(dangling);
  for (NodeId n : {bytes, bytearray, set, frozen, newobj_ex, bad_global, bad_object, kNoNode}) {
    CAPTURE(n);
    CHECK_EQ(Encode(g, n).status().code(), Code::kInvalidArgument);
  }
  CHECK_EQ(Encode(g, bytes).status().message(), "node 0: protocol 2 cannot write bytes (protocol 3) as it is");
}

TEST_CASE("encoder nesting past max_depth is kLimit; deep graphs need no C stack") {
  Graph g;
  NodeId inner = g.AddNone();
  for (int i = 0; i < 1000000; ++i) {
    NodeId one[] = {inner};
    inner = g.AddSequence(i % 2 ? Kind::kList : Kind::kTuple, one);
  }
  Result<std::vector<std::byte>> e = Encode(g, inner);
  CHECK_EQ(e.status().code(), Code::kLimit);
  CHECK_EQ(e.status().message(), "pickle nesting > 100000 while encoding");
  e = Encode(g, inner, 2000000);
  REQUIRE(e.ok());
  // PROTO, NONE, STOP; per list EMPTY_LIST and APPEND, per tuple TUPLE1; a
  // memo put per container: BINPUT for the first 256, LONG_BINPUT after.
  CHECK_EQ(e->size(), 2 + 1 + 1 + 500000 * 2 + 500000 * 1 + 256 * 2 + (1000000 - 256) * 5);

  Graph small;
  NodeId t = small.AddNone();
  for (int i = 0; i < 10; ++i) {
    NodeId one[] = {t};
    t = small.AddSequence(Kind::kTuple, one);
  }
  CHECK(Encode(small, t, 10).ok());
  CHECK_EQ(Encode(small, t, 9).status().code(), Code::kLimit);
}

TEST_CASE("recursive containers are written as CPython writes them") {
  // l = []; t = (l, 1, 2, 3); l.append(t): the tuple is reached through
  // itself, so its elements are popped and it is fetched from the memo.
  Graph g;
  NodeId l = g.AddSequence(Kind::kList, {});
  NodeId one = g.AddInt(1), two = g.AddInt(2), three = g.AddInt(3);
  NodeId items[] = {l, one, two, three};
  NodeId t = g.AddSequence(Kind::kTuple, items);
  g.Append(l, t);
  Result<std::vector<std::byte>> e = Encode(g, t);
  REQUIRE(e.ok());
  CHECK_EQ(AsString(*e), "\x80\x02(]q\x00(h\x00K\x01K\x02K\x03tq\x01" "aK\x01K\x02K\x03" "1h\x01."s);
  Result<Decoded> d = Decode(*e, 0);
  REQUIRE(d.ok());
  CHECK_EQ(GraphText(d->graph, d->root), "&1=([*1], 1, 2, 3)\n");
}

}  // namespace
}  // namespace zerofold::pickle

namespace zerofold::pickle {
namespace {

// Every single-byte change of a few fixtures: the decoder either fails with
// a bad-input code at an offset inside the input, or gives a graph that the
// encoder writes (or refuses as unwritable) and that reads back the same.
TEST_CASE("single-byte mutations never crash, and what decodes re-encodes to the same graph") {
  std::vector<std::string> stems = FixtureStems("protocols");
  stems.push_back(std::string(ZF_SOURCE_ROOT) + "/fixtures/pickle/torch/gen_state_dict");
  stems.push_back(std::string(ZF_SOURCE_ROOT) + "/fixtures/pickle/roundtrip/recursive");
  size_t decoded = 0, encoded = 0;
  for (const std::string& stem : stems) {
    CAPTURE(stem);
    const std::vector<std::byte> original = ReadFile(stem + ".pkl");
    REQUIRE(!original.empty());
    std::vector<std::byte> bytes = original;
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        bytes[i] = original[i] ^ std::byte{flip};
        Result<Decoded> d = Decode(bytes, 100);
        if (!d.ok()) {
          Code c = d.status().code();
          if (c != Code::kCorrupt && c != Code::kUnsupported && c != Code::kLimit) FAIL(d.status().ToString());
          if (d.status().offset() < 100 || d.status().offset() > 100 + bytes.size()) FAIL(d.status().ToString());
          continue;
        }
        ++decoded;
        Result<std::vector<std::byte>> e = Encode(d->graph, d->root);
        if (!e.ok()) {
          if (e.status().code() != Code::kInvalidArgument) FAIL(e.status().ToString());
          continue;
        }
        ++encoded;
        Result<Decoded> again = Decode(*e, 0);
        REQUIRE_MESSAGE(again.ok(), again.status().ToString());
        if (GraphText(again->graph, again->root) != GraphText(d->graph, d->root)) {
          CAPTURE(i);
          CAPTURE(flip);
          FAIL("re-encoded graph differs");
        }
      }
      bytes[i] = original[i];
    }
  }
  // Many mutations hit a string's or an int's bytes and still decode.
  CHECK_GT(decoded, 1000u);
  CHECK_GT(encoded, 500u);
}

}  // namespace
}  // namespace zerofold::pickle
