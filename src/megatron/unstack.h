// --unstack: Megatron-Core's stacked keys split into the per-layer and
// per-expert names Megatron itself gives them (singleton_local_shards), as
// slices of the gather plan (gather::SliceAxis0): no byte is read twice.
//
// The rule (megatron/README, from TransformerBlock.sharded_state_dict and
// SequentialMLP.sharded_state_dict): first a key `<P>decoder.layers.<R>`
// (`<P>` empty or ending in `.`, `<R>` not starting with `<digits>.`) of
// shape [L, ...] becomes `<P>decoder.layers.<i>.<R>` = t[i], i = 0..L-1;
// then a key `<H>.mlp.experts.experts.<R>` (`<R>` not starting with a
// digit) of shape [E, ...] becomes `<H>.mlp.experts.experts.<e>.<R>` =
// t[e]. Parts keep the key's place, in index order.
#ifndef ZEROFOLD_MEGATRON_UNSTACK_H_
#define ZEROFOLD_MEGATRON_UNSTACK_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gather/plan.h"
#include "zerofold/result.h"

namespace zerofold::megatron {

// A stacked name: parts are named head + index + "." + rest.
struct StackedName {
  std::string head;
  std::string rest;
};

// The layer stacking of `name` (rule's first step), or nullopt.
std::optional<StackedName> LayerStack(std::string_view name);
// The expert stacking of `name` (rule's second step), or nullopt.
std::optional<StackedName> ExpertStack(std::string_view name);

struct Unstacked {
  std::vector<gather::GatherTensor> tensors;
  size_t split_keys = 0;  // keys split (a key split at both steps counts once)
};

// Applies the rule to every tensor of rank >= 1. Errors of SliceAxis0.
Result<Unstacked> Unstack(std::vector<gather::GatherTensor> tensors);

}  // namespace zerofold::megatron

#endif  // ZEROFOLD_MEGATRON_UNSTACK_H_
