#include "megatron/unstack.h"

#include <utility>

#include "gather/slice.h"

namespace zerofold::megatron {

namespace {

constexpr std::string_view kLayers = "decoder.layers.";
constexpr std::string_view kExperts = ".mlp.experts.experts.";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// True if `rest` starts with one or more digits and a dot.
bool StartsWithIndex(std::string_view rest) {
  size_t i = 0;
  while (i < rest.size() && IsDigit(rest[i])) ++i;
  return i > 0 && i < rest.size() && rest[i] == '.';
}

// Splits every tensor `stack` names into its slices along axis 0.
// origin[k] is the input key tensor k comes from; split[key] is set for
// every key split.
Status SplitAll(std::vector<gather::GatherTensor>* tensors, std::optional<StackedName> (*stack)(std::string_view),
                std::vector<size_t>* origin, std::vector<bool>* split) {
  std::vector<gather::GatherTensor> out;
  std::vector<size_t> out_origin;
  for (size_t k = 0; k < tensors->size(); ++k) {
    gather::GatherTensor& t = (*tensors)[k];
    std::optional<StackedName> s = t.shape.empty() ? std::nullopt : stack(t.name);
    if (!s) {
      out.push_back(std::move(t));
      out_origin.push_back((*origin)[k]);
      continue;
    }
    (*split)[(*origin)[k]] = true;
    for (int64_t i = 0; i < t.shape[0]; ++i) {
      ZF_ASSIGN_OR_RETURN(gather::GatherTensor part,
                          gather::SliceAxis0(t, i, s->head + std::to_string(i) + "." + s->rest));
      out.push_back(std::move(part));
      out_origin.push_back((*origin)[k]);
    }
  }
  *tensors = std::move(out);
  *origin = std::move(out_origin);
  return Status::OK();
}

}  // namespace

std::optional<StackedName> LayerStack(std::string_view name) {
  for (size_t at = name.find(kLayers); at != std::string_view::npos; at = name.find(kLayers, at + 1)) {
    if (at > 0 && name[at - 1] != '.') continue;
    std::string_view rest = name.substr(at + kLayers.size());
    if (rest.empty() || StartsWithIndex(rest)) continue;
    return StackedName{std::string(name.substr(0, at + kLayers.size())), std::string(rest)};
  }
  return std::nullopt;
}

std::optional<StackedName> ExpertStack(std::string_view name) {
  for (size_t at = name.find(kExperts); at != std::string_view::npos; at = name.find(kExperts, at + 1)) {
    std::string_view rest = name.substr(at + kExperts.size());
    if (at == 0 || rest.empty() || IsDigit(rest[0])) continue;
    return StackedName{std::string(name.substr(0, at + kExperts.size())), std::string(rest)};
  }
  return std::nullopt;
}

Result<Unstacked> Unstack(std::vector<gather::GatherTensor> tensors) {
  Unstacked u;
  std::vector<size_t> origin(tensors.size());
  for (size_t k = 0; k < origin.size(); ++k) origin[k] = k;
  std::vector<bool> split(tensors.size(), false);
  ZF_TRY(SplitAll(&tensors, &LayerStack, &origin, &split));
  ZF_TRY(SplitAll(&tensors, &ExpertStack, &origin, &split));
  for (bool s : split) u.split_keys += s ? 1 : 0;
  u.tensors = std::move(tensors);
  return u;
}

}  // namespace zerofold::megatron
