#include "gather/layout.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "model/glob.h"

namespace zerofold::gather {

std::string_view MergeFormatName(MergeFormat format) {
  return format == MergeFormat::kSafetensors ? "safetensors" : "torch";
}

Result<MergeLayout> LayOut(std::span<const std::string> tensor_names, std::span<const Tie> ties,
                           std::span<const std::string> order_first, std::span<const std::string> only) {
  std::unordered_map<std::string, size_t> tensor_of;  // name (tensor or tie) -> plan tensor
  for (size_t i = 0; i < tensor_names.size(); ++i) tensor_of.emplace(tensor_names[i], i);
  for (const Tie& t : ties) {
    auto owner = tensor_of.find(t.owner);
    if (owner == tensor_of.end())
      return Status::Internal("the plan ties " + t.name + " to " + t.owner + ", which it does not hold");
    tensor_of.emplace(t.name, owner->second);
  }

  // Output order: module order, then what the module does not name.
  std::vector<std::string> order;
  std::unordered_set<std::string> placed;
  auto place = [&](const std::string& name) {
    if (tensor_of.count(name) && placed.insert(name).second) order.push_back(name);
  };
  for (const std::string& name : order_first) place(name);
  for (const std::string& name : tensor_names) place(name);
  for (const Tie& t : ties) place(t.name);

  auto selected = [&](const std::string& name) { return only.empty() || model::MatchesAny(only, name); };

  MergeLayout layout;
  std::unordered_map<size_t, size_t> holder;  // plan tensor -> entry holding its data
  for (const std::string& name : order) {
    size_t tensor = tensor_of.at(name);
    if (!selected(name) && !selected(tensor_names[tensor])) continue;
    OutputEntry e;
    e.name = name;
    e.tensor = tensor;
    auto h = holder.find(tensor);
    if (h == holder.end()) {
      e.owner = layout.entries.size();
      holder.emplace(tensor, e.owner);
    } else {
      e.tie = true;
      e.owner = h->second;
    }
    layout.entries.push_back(std::move(e));
  }
  if (layout.entries.empty() && !only.empty()) {
    std::string patterns;
    for (const std::string& p : only) patterns += (patterns.empty() ? "'" : ", '") + p + "'";
    return Status::InvalidArgument("--only " + patterns + " matches none of the " + std::to_string(order.size()) +
                                   " tensor names (e.g. " + (order.empty() ? std::string("none") : order[0]) + ")");
  }
  return layout;
}

}  // namespace zerofold::gather
