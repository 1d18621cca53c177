// The CLI's exit codes: a closed table, part of the interface (append only).
#ifndef ZEROFOLD_CLI_EXIT_CODES_H_
#define ZEROFOLD_CLI_EXIT_CODES_H_

#include <csignal>

#include "zerofold/status.h"

namespace zerofold::cli {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;  // corrupt, unsupported, unsafe, limit, ambiguous input
constexpr int kExitUsage = 2;     // bad flags or arguments
constexpr int kExitIO = 3;        // the system failed a read or write
constexpr int kExitInternal = 4;  // a zerofold bug
// A run stopped by signal N (SIGINT, SIGTERM, SIGHUP: cli/signals.h) exits
// 128 + N, as a shell reports a process the signal killed: 130, 143, 129.
constexpr int kExitSignalBase = 128;

// The exit code for a Status; the worst of several is their maximum.
inline int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return kExitOk;
    case Code::kCorrupt:
    case Code::kUnsupported:
    case Code::kUnsafe:
    case Code::kLimit:
    case Code::kAmbiguous: return kExitBadInput;
    case Code::kInvalidArgument: return kExitUsage;
    case Code::kNotFound:
    case Code::kIO: return kExitIO;
    case Code::kInternal: return kExitInternal;
    case Code::kCancelled: return kExitSignalBase + SIGINT;  // main() returns the signal's own
  }
  return kExitInternal;
}

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_EXIT_CODES_H_
