// SIGINT, SIGTERM and SIGHUP during a command: the run stops through the
// cancellation token (io/cancel_env.h), so it unwinds as a failed run does:
// temp files removed, a folder's committed files removed (a --part run
// keeps its complete files for its rerun), inputs untouched. main() then
// exits 128 + the signal (130, 143, 129), or 0 when the signal came after
// the run had completed. A second signal exits at once, leaving temp files
// for the next run's sweep (Env::NewAtomicFile), as SIGKILL does. What
// already went to standard output stays there.
#ifndef ZEROFOLD_CLI_SIGNALS_H_
#define ZEROFOLD_CLI_SIGNALS_H_

#include "zerofold/env.h"

namespace zerofold::cli {

// The Env every command runs on: the process's files, read and written
// through the token the signal handlers set. The first call installs the
// handlers.
Env* CommandEnv();

// The signal that stopped the run, or 0.
int CaughtSignal();

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_SIGNALS_H_
