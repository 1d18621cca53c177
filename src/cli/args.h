// A small flag parser: `--name`, `--name=value`, `--name value`, `-` as a
// positional (stdin/stdout), `--` ends flags, `-h` is `--help`. Each command
// declares its flags; unknown flags (with the closest known one suggested)
// and missing values are usage errors (exit 2).
#ifndef ZEROFOLD_CLI_ARGS_H_
#define ZEROFOLD_CLI_ARGS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zerofold/result.h"

namespace zerofold::cli {

struct FlagSpec {
  std::string name;     // without dashes: "json", "max-shard-size"
  bool takes_value;
  std::string help;     // one line for --help; empty hides the flag
  std::string value_name = "VALUE";
  // A switch (takes_value false) that also takes `--name=VALUE`: the bare
  // form counts in ParsedArgs::switches, the other sets values[name].
  bool optional_value = false;
};

struct ParsedArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::string> values;  // flags with values (last wins)
  std::map<std::string, int> switches;        // flags without values: count
  bool Has(const std::string& name) const { return switches.count(name) || values.count(name); }
  std::optional<std::string> Value(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

// kInvalidArgument naming the flag on unknown flags or missing values.
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs);

// The candidate closest to `word` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours each count 1), if it is close
// enough to be a typo of it: at most 1 edit for words of up to 4
// characters, 2 for longer ones. Ties go to the first candidate.
std::optional<std::string> ClosestWord(const std::string& word, const std::vector<std::string>& candidates);

// "  --name VALUE   help" lines for --help.
std::string FlagHelp(const std::vector<FlagSpec>& specs);

// Parses sizes as transformers does: "5GB" (10^9), "500MB", "2GiB" (2^30),
// "100KB", plain bytes "12345". kInvalidArgument on anything else.
Result<uint64_t> ParseSize(const std::string& text);

// --buffer-size SIZE, if given, into *bytes: kInvalidArgument unless it is
// a size (ParseSize) from 4KiB to 4GiB.
Status ApplyBufferSize(const ParsedArgs& args, size_t* bytes);

// --only PATTERN[,..], if given, into *patterns: the non-empty items of its
// comma-separated list ("a,,b" gives a, b); kInvalidArgument when none.
Status ApplyOnly(const ParsedArgs& args, std::vector<std::string>* patterns);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_ARGS_H_
