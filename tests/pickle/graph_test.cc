#include "pickle/graph.h"

#include <doctest/doctest.h>

#include <vector>

namespace zerofold::pickle {
namespace {

TEST_CASE("graph builders and accessors") {
  Graph g;
  NodeId i = g.AddInt(-7);
  NodeId f = g.AddFloat(1.5);
  NodeId s = g.AddStr("key");
  NodeId big = g.AddBigInt(std::string_view("\x00\x01", 2));
  NodeId glob = g.AddGlobal("torch._utils", "_rebuild_tensor_v2");
  NodeId items[] = {i, f, s};
  NodeId t = g.AddSequence(Kind::kTuple, items);
  NodeId l = g.AddSequence(Kind::kList, items);
  NodeId d = g.AddDict();
  g.SetItem(d, s, t);
  NodeId pid = g.AddPersId(t);
  CHECK_EQ(g.AsInt(i), -7);
  CHECK_EQ(g.AsFloat(f), 1.5);
  CHECK_EQ(g.AsStr(s), "key");
  CHECK_EQ(g.AsStr(big), std::string_view("\x00\x01", 2));
  CHECK_EQ(g.GlobalModule(glob), "torch._utils");
  CHECK_EQ(g.GlobalName(glob), "_rebuild_tensor_v2");
  CHECK(g.IsGlobal(glob, "torch._utils", "_rebuild_tensor_v2"));
  CHECK_FALSE(g.IsGlobal(glob, "torch._utils", "_rebuild_parameter"));
  CHECK_FALSE(g.IsGlobal(s, "key", ""));
  CHECK_FALSE(g.IsGlobal(kNoNode, "", ""));
  CHECK_EQ(std::vector<NodeId>(g.Items(t).begin(), g.Items(t).end()), std::vector<NodeId>{i, f, s});
  CHECK_EQ(std::vector<NodeId>(g.Items(d).begin(), g.Items(d).end()), std::vector<NodeId>{s, t});
  CHECK_EQ(g.PersId(pid), t);
  g.ReplaceItem(t, 1, s);
  g.ReplaceItem(l, 0, s);
  CHECK_EQ(g.Items(t)[1], s);
  CHECK_EQ(g.Items(l)[0], s);
  CHECK_EQ(g.Items(l)[1], f);  // the tuple and the list do not share storage
  CHECK_EQ(g.size(), 9u);
  CHECK_GT(g.ApproxBytes(), 9 * 16u);
}

TEST_CASE("graph builders accept views into the same graph") {
  Graph g;
  NodeId s = g.AddStr("a string longer than any small buffer");
  for (int k = 0; k < 100; ++k) s = g.AddStr(g.AsStr(s));  // the arena grows while copying
  CHECK_EQ(g.AsStr(s), "a string longer than any small buffer");
  NodeId one = g.AddInt(1);
  NodeId t = g.AddSequence(Kind::kTuple, {&one, 1});
  for (int k = 0; k < 100; ++k) t = g.AddSequence(Kind::kTuple, g.Items(t));
  CHECK_EQ(g.Items(t).size(), 1u);
  CHECK_EQ(g.Items(t)[0], one);
  NodeId l = g.AddSequence(Kind::kList, {&one, 1});
  for (int k = 0; k < 10; ++k) g.Extend(l, g.Items(l));
  CHECK_EQ(g.Items(l).size(), 1024u);
}

}  // namespace
}  // namespace zerofold::pickle
