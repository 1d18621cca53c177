// Flags that raise the limits guarding against hostile input, shared by
// every command that reads checkpoints. Error messages name these flags.
#ifndef ZEROFOLD_CLI_LIMIT_FLAGS_H_
#define ZEROFOLD_CLI_LIMIT_FLAGS_H_

#include <vector>

#include "cli/args.h"
#include "torch/checkpoint.h"
#include "zerofold/status.h"

namespace zerofold::cli {

// --max-pickle-depth, --max-pickle-memo, --max-pickle-stack,
// --max-pickle-nodes, --max-pickle-bytes, --max-graph-visits, --max-path-depth.
const std::vector<FlagSpec>& LimitFlags();

// Applies the limit flags present in args; kInvalidArgument naming the flag
// for a value that is not a number.
Status ApplyLimitFlags(const ParsedArgs& args, torch::ReadOptions* options);

// specs + LimitFlags().
std::vector<FlagSpec> WithLimitFlags(std::vector<FlagSpec> specs);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_LIMIT_FLAGS_H_
