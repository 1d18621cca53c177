#include "megatron/common.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <string_view>

#include "megatron/folder.h"
#include "model/graph_children.h"
#include "model/hf_folder.h"
#include "pickle/safety.h"
#include "torch/dtype.h"
#include "torch/read.h"

namespace zerofold::megatron {

namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::NodeId;

constexpr int kMaxPlainDepth = 8;

// A plain value as JSON: scalars, torch dtypes (as torch prints them),
// lists and tuples of plain values. nullopt for anything else.
std::optional<json::Value> Plain(const Graph& g, NodeId n, int depth = 0) {
  if (n == pickle::kNoNode || depth > kMaxPlainDepth) return std::nullopt;
  switch (g.kind(n)) {
    case Kind::kNone: return json::Value::Null();
    case Kind::kBool: return json::Value::Bool(g.AsBool(n));
    case Kind::kInt: return json::Value::Int(g.AsInt(n));
    case Kind::kFloat: {
      const double v = g.AsFloat(n);
      if (!std::isfinite(v)) return std::nullopt;
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", v);
      return json::Value::Number(text);
    }
    case Kind::kStr: return json::Value::String(std::string(g.AsStr(n)));
    case Kind::kGlobal:
      if (g.GlobalModule(n) == "torch" && torch::FromName(g.GlobalName(n)))
        return json::Value::String("torch." + std::string(g.GlobalName(n)));
      return std::nullopt;
    case Kind::kTuple:
    case Kind::kList: {
      std::vector<json::Value> items;
      for (NodeId c : g.Items(n)) {
        std::optional<json::Value> v = Plain(g, c, depth + 1);
        if (!v) return std::nullopt;
        items.push_back(std::move(*v));
      }
      return json::Value::Array(std::move(items));
    }
    default: return std::nullopt;
  }
}

bool IsMapping(const Graph& g, NodeId n) {
  return n != pickle::kNoNode && (g.kind(n) == Kind::kDict || model::IsOrderedDict(g, n));
}

// An object's attributes: its BUILD state when that is a dict.
std::vector<NodeId> Attributes(const Graph& g, NodeId n) {
  if (n == pickle::kNoNode || g.kind(n) != Kind::kObject) return {};
  NodeId state = g.Object(n).state;
  if (state != pickle::kNoNode && g.kind(state) == Kind::kDict) return model::MappingEntries(g, state);
  return {};
}

}  // namespace

Result<CommonState> ReadCommon(Env* env, const std::string& folder, const torch::ReadOptions& read) {
  CommonState c;
  const std::string path = model::JoinPath(folder, kCommonFile);
  if (!env->FileExists(path) || env->IsDirectory(path)) return c;
  c.present = true;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
  Result<torch::Checkpoint> read_ckpt = torch::ReadCheckpoint(*src, read);
  if (!read_ckpt.ok()) return Status(read_ckpt.status()).WithPath(path);
  const torch::Checkpoint& ckpt = *read_ckpt;
  const Graph& g = ckpt.graph;
  c.unsafe_globals = ckpt.unsafe_globals;
  if (!IsMapping(g, ckpt.root)) {
    // torch.load of the folder runs what it names whatever its root is.
    if (!c.unsafe_globals.empty()) return pickle::RefuseUnsafe(c.unsafe_globals, kUnsafeCommonHint).WithPath(path);
    return Status::Corrupt("the root is no dict").WithPath(path).WithRecord("data.pkl");
  }
  const std::vector<NodeId> top = model::MappingEntries(g, ckpt.root);
  for (size_t i = 0; i + 1 < top.size(); i += 2) {
    if (g.kind(top[i]) != Kind::kStr) continue;
    const std::string_view key = g.AsStr(top[i]);
    const NodeId value = top[i + 1];
    c.top_keys.emplace_back(key);
    if ((key == "iteration" || (key == "global_step" && !c.iteration)) && g.kind(value) == Kind::kInt) {
      c.iteration = g.AsInt(value);
    } else if (key == "checkpoint_version") {
      if (g.kind(value) == Kind::kFloat) c.checkpoint_version = g.AsFloat(value);
      if (g.kind(value) == Kind::kInt) c.checkpoint_version = static_cast<double>(g.AsInt(value));
    } else if (key == "optimizer") {
      c.has_optimizer = true;
    } else if (key == "args" && g.kind(value) == Kind::kObject) {
      c.has_args = true;
      const std::vector<NodeId> attrs = Attributes(g, value);
      for (const char* name : kShownArgs) {
        for (size_t k = 0; k + 1 < attrs.size(); k += 2) {
          if (g.kind(attrs[k]) != Kind::kStr || g.AsStr(attrs[k]) != name) continue;
          if (std::optional<json::Value> v = Plain(g, attrs[k + 1])) c.args.emplace_back(name, std::move(*v));
          break;
        }
      }
    } else if (key == "content_metadata" && IsMapping(g, value)) {
      const std::vector<NodeId> entries = model::MappingEntries(g, value);
      for (size_t k = 0; k + 1 < entries.size(); k += 2) {
        if (g.kind(entries[k]) != Kind::kStr) continue;
        std::optional<json::Value> v = Plain(g, entries[k + 1]);
        if (!v) continue;
        if (g.AsStr(entries[k]) == kShardingTypeKey && v->is_string()) c.sharding_type = v->string();
        c.content_metadata.emplace_back(std::string(g.AsStr(entries[k])), std::move(*v));
      }
    }
  }
  return c;
}

}  // namespace zerofold::megatron
