// The shrink command's output flags beyond one shrunk torch file per input:
// --to safetensors, --max-shard-size (folder output), --dtype, --select,
// --dedupe-tied. Used by shrink_command.cc.
#ifndef ZEROFOLD_CLI_SHRINK_CONVERT_H_
#define ZEROFOLD_CLI_SHRINK_CONVERT_H_

#include <string>

#include "cli/args.h"
#include "cli/progress.h"
#include "ops/shrink.h"
#include "zerofold/env.h"

namespace zerofold::cli {

// OUT is written as a folder in transformers' layout when IN is a folder,
// OUT is an existing folder, or OUT ends with '/'.
bool OutputIsFolder(Env* env, const std::string& in, const std::string& out);

// Runs the request when it needs ops/to_safetensors.h or
// ops/torch_shards.h and returns the exit code; returns -1 when the plain
// shrink path (ShrinkFile / ShrinkFolder) handles it, after filling
// shrink.dtype and shrink.select. Usage errors exit 2 with their message.
int RunShrinkConversion(const ParsedArgs& args, const std::string& in, const std::string& out,
                        ops::ShrinkOptions& shrink, Progress& progress, bool quiet, bool as_json);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_SHRINK_CONVERT_H_
