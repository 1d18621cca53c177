#include "scan/optimizer.h"

#include "dcp/plan.h"

namespace zerofold::scan {

bool IsOptimizerStatePath(const std::vector<std::string>& path) {
  if (path.empty()) return false;
  for (const char* name : {"optimizer", "optim", "optimizer_state_dict", "optimizer_states", "optimizers"})
    if (path.front() == name) return true;
  if (path.size() < 3) return false;
  bool state_name = false;
  for (const char* name : dcp::kOptimizerStateNames)
    if (path.back() == name) state_name = true;
  if (!state_name) return false;
  // "state", then at least one element naming the parameter, then NAME.
  for (size_t i = 0; i + 2 < path.size(); ++i)
    if (path[i] == "state") return true;
  return false;
}

std::vector<std::string> RulePath(const std::vector<torch::PathElem>& path) {
  std::vector<std::string> out;
  for (const torch::PathElem& e : path) {
    if (e.type == torch::PathElem::Type::kIntKey || e.type == torch::PathElem::Type::kIndex) {
      out.push_back(std::to_string(e.num));
      continue;
    }
    size_t start = 0;
    for (;;) {
      const size_t dot = e.str.find('.', start);
      out.push_back(e.str.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  return out;
}

std::vector<std::string> RulePath(const std::string& key) {
  return RulePath({torch::PathElem{torch::PathElem::Type::kStrKey, key, 0}});
}

}  // namespace zerofold::scan
