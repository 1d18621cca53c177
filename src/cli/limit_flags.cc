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
  for (const FlagSpec& f : LimitFlags()) {
    std::optional<std::string> v = args.Value(f.name);
    if (!v) continue;
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok()) return Status::InvalidArgument("--" + f.name + " needs a number, got '" + *v + "'");
    ZF_TRY(torch::SetReadLimit(o, f.name, *n));
  }
  return Status::OK();
}

}  // namespace zerofold::cli
