// Error lines and hints on stderr, in one format:
//   zerofold: PATH: RECORD @ OFFSET: code: why
//   zerofold: hint: ...
#ifndef ZEROFOLD_CLI_REPORT_H_
#define ZEROFOLD_CLI_REPORT_H_

#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/status.h"

namespace zerofold::cli {

void PrintError(const Status& status);
void PrintWarning(const std::string& path, const std::string& message);
void PrintHint(const std::string& hint);
// A command's failure: prints the error line, and with `as_json` also
// {"error":{...}} on stdout; returns the exit code for `status`.
int CommandFailed(const Status& status, bool as_json);
// Prints a note for each temp file that env's sweeps removed (left by a
// zerofold run that is gone; Env::NewAtomicFile), and returns their paths.
std::vector<std::string> NoteRemovedTempFiles(Env* env);
// Prints a usage error and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_REPORT_H_
