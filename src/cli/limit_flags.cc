#include "cli/limit_flags.h"

#include <string>

namespace zerofold::cli {

const std::vector<FlagSpec>& LimitFlags() {
  static const std::vector<FlagSpec>* flags = new std::vector<FlagSpec>{
      {"max-pickle-depth", true, "pickle nesting limit (default 1000)", "N"},
      {"max-pickle-memo", true, "pickle memo entries (default 2^26)", "N"},
      {"max-pickle-stack", true, "pickle stack values (default 2^26)", "N"},
      {"max-pickle-nodes", true, "pickle values in total (default 2^28)", "N"},
      {"max-pickle-bytes", true, "data.pkl bytes held in memory (default 4GiB)", "SIZE"},
      {"max-graph-visits", true, "graph nodes visited and path steps kept naming tensors (default 2^22)", "N"},
      {"max-path-depth", true, "steps in one tensor's path (default 10000)", "N"},
  };
  return *flags;
}

std::vector<FlagSpec> WithLimitFlags(std::vector<FlagSpec> specs) {
  for (const FlagSpec& f : LimitFlags()) specs.push_back(f);
  return specs;
}

Status ApplyLimitFlags(const ParsedArgs& args, torch::ReadOptions* o) {
  auto number = [&](const char* name, uint64_t* out) -> Status {
    std::optional<std::string> v = args.Value(name);
    if (!v) return Status::OK();
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok()) return Status::InvalidArgument(std::string("--") + name + " needs a number, got '" + *v + "'");
    *out = *n;
    return Status::OK();
  };
  uint64_t depth = o->pickle.max_depth, path_depth = o->max_path_depth;
  ZF_TRY(number("max-pickle-depth", &depth));
  ZF_TRY(number("max-pickle-memo", &o->pickle.max_memo));
  ZF_TRY(number("max-pickle-stack", &o->pickle.max_stack));
  ZF_TRY(number("max-pickle-nodes", &o->pickle.max_nodes));
  ZF_TRY(number("max-pickle-bytes", &o->max_pickle_bytes));
  ZF_TRY(number("max-graph-visits", &o->max_graph_visits));
  ZF_TRY(number("max-path-depth", &path_depth));
  if (depth > UINT32_MAX || path_depth > UINT32_MAX) return Status::InvalidArgument("depth limits go up to 4294967295");
  o->pickle.max_depth = static_cast<uint32_t>(depth);
  o->max_path_depth = static_cast<uint32_t>(path_depth);
  return Status::OK();
}

}  // namespace zerofold::cli
