// Family tables for `merge --hf`: the model-specific knowledge of how a
// trainer's tensor names and layouts become a Hugging Face model's, as
// data (tables/hf/*.json, embedded in the binary at build time; a user's
// --hf-table file adds to them or overrides one of the same family and
// source without recompiling). The format (tables/hf/README.md):
//
//   {
//     "family": "qwen2",                 // a name for messages
//     "source": "megatron",              // megatron | torchtitan | hf
//     "model_types": ["qwen2"],          // BASE config.json model_type; "*": any
//     "architectures": ["Qwen2ForCausalLM"],  // optional: any listed matches too
//     "strip_prefixes": ["module."],     // optional: cut from trainer names first
//     "facts": ["where the rules come from", ...],
//     "ties": [{"name": N, "owner": O, "if": KEY}],  // optional, below
//     "rules": [ {"from": PATTERN, "to": NAME or [NAMES], "op": OP,
//                 "if": CONFIG_KEY, "unless": CONFIG_KEY, PARAMS...}, ... ]
//   }
//
// A PATTERN is literal text with placeholders: `{X}` with X one uppercase
// letter matches digits (a layer {L}, an expert {E}); `{name}` of any other
// name matches one or more characters. The first rule whose pattern
// matches a whole trainer name and whose condition holds (a config value
// that is true / false or absent) maps it. `to` names use the pattern's
// placeholders; `{X+key}` adds the config's integer `key` (MTP layers
// after the decoder's). OPs (all gather-plan transforms, gather/regrid.h):
//   copy         (default) one output, the tensor as it is
//   drop         no output (a tied output layer, a buffer HF lacks)
//   trim_vocab   rows [0, config vocab_size) (Megatron pads the vocab)
//   split_qkv    Megatron's fused linear_qkv (weight or bias), rows grouped
//                by query group: [q (heads/groups x head_dim), k, v] per
//                group -> the 3 `to` names. Params "heads", "groups",
//                "head_dim": config keys (defaults num_attention_heads,
//                num_key_value_heads (else heads), head_dim (else
//                hidden_size / heads)).
//   split_rows   dim 0 cut into len(to) equal blocks (Megatron's
//                linear_fc1 = [gate; up])
//   rope_permute rows (heads, head_dim/2, 2) -> (heads, 2, head_dim/2):
//                Meta's interleaved RoPE layout to HF's rotate-half one.
//                Param "heads": a config key or a number.
//   unstack      axis 0 split: `to` holds one placeholder `from` lacks,
//                given each index (TorchTitan's stacked experts).
//   tied         no output, but the tensor must equal the trainer tensor
//                `to` names (after strip_prefixes) element for element: a
//                tied model's output layer saved beside its embedding. Checked
//                before writing (hfexport/tied.h); a head trained apart
//                from the embedding is refused, never silently dropped.
// A tie writes BASE name N as a copy of exported name O when BASE lists N,
// no rule exported it and the condition holds (a tied lm_head.weight that
// BASE stores beside model.embed_tokens.weight). N is a pattern, O may use
// its placeholders (DeepSeek-V3's MTP layers store copies of the
// embedding and the head: model.layers.{L}.embed_tokens.weight).
#ifndef ZEROFOLD_HFEXPORT_TABLE_H_
#define ZEROFOLD_HFEXPORT_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "zerofold/result.h"

namespace zerofold::hfexport {

enum class Op : uint8_t { kCopy, kDrop, kTrimVocab, kSplitQkv, kSplitRows, kRopePermute, kUnstack, kTied };

// "copy", "drop", ...: the table's spelling.
std::string_view OpName(Op op);

struct Rule {
  std::string from;
  std::vector<std::string> to;
  Op op = Op::kCopy;
  std::string if_key, unless_key;       // "" when absent
  std::map<std::string, json::Value> params;  // heads, groups, head_dim
  uint64_t offset = 0;                  // the rule's offset in its file
};

struct TableTie {
  std::string name, owner, if_key;
};

struct Table {
  std::string path;  // the file, or "builtin:tables/hf/<name>.json"
  std::string family;
  std::string source;
  std::vector<std::string> model_types;
  std::vector<std::string> architectures;
  std::vector<std::string> strip_prefixes;
  std::vector<Rule> rules;
  std::vector<TableTie> ties;
};

// Parses a table. kCorrupt (path: `path`, offset: where) for text that is
// no JSON, a member of the wrong type or missing, an unknown op or member,
// a `to` of the wrong arity for its op, a pattern with an unclosed brace.
Result<Table> ParseTable(std::string_view text, const std::string& path);

// The tables built into the binary (tables/hf/*.json), parsed. kInternal
// if one does not parse (a build that ships a bad table).
Result<std::vector<Table>> BuiltinTables();

// Placeholder bindings of a match: name -> the text it matched.
using Bindings = std::map<std::string, std::string>;

// Matches `name` against `pattern` whole. nullopt when it does not match.
std::optional<Bindings> MatchPattern(std::string_view pattern, std::string_view name);

// `to` with its placeholders replaced (`{X+key}` adding config integer
// `key`). kCorrupt (naming the table's rule) for a placeholder no
// binding or config value gives.
Result<std::string> Substitute(std::string_view to, const Bindings& bindings, const json::Value& config);

}  // namespace zerofold::hfexport

#endif  // ZEROFOLD_HFEXPORT_TABLE_H_
