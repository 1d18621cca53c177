// SIGINT, SIGTERM and SIGHUP during a command.
//
// The first signal stops the run through the cancellation token
// (io/cancel_env.h), so it unwinds as a failed run does: temp files
// removed, a folder's committed files removed (a --part run keeps its
// complete files for its rerun), inputs untouched. main() then exits 128 +
// the signal (130, 143, 129), or 0 when the signal came after the run had
// completed. What already went to standard output stays there.
//
// A second signal (of any of the three) stops at once, without unwinding:
// its handler removes every temp file the run has and every file under a
// final name the run created (io/exit_cleanup.h; a file the run replaced,
// under --force or in place, stays, with its new bytes), writes one line
// "zerofold: interrupted again by SIGINT: stopped at once; removed what this
// run had written" to standard error, and _exits 128 + the second signal.
// So 130, 143 and 129 mean, as after one signal: nothing under a final name
// that the run made. A --part run stopped at once loses its complete files
// too (its rerun writes them again): the rule is the same for every run, and
// an ordinary failure, not a second signal, is what keeps them. Folders the
// run created may stay, empty.
//
// Once the run is over (RunEnded), a second signal removes nothing that is
// under a final name: it _exits 0 if the run succeeded (its output is
// complete; what was still to go to standard output is cut), else 128 + the
// signal, the failed run having unwound already.
#ifndef ZEROFOLD_CLI_SIGNALS_H_
#define ZEROFOLD_CLI_SIGNALS_H_

#include "zerofold/env.h"

namespace zerofold::cli {

// The Env every command runs on: the process's files, read and written
// through the token the signal handlers set. The first call installs the
// handlers and turns the stop registry on (io::ExitCleanup::EnableProcess).
Env* CommandEnv();

// The signal that stopped the run, or 0.
int CaughtSignal();

// The command's library call has returned (`ok`: it succeeded): its
// outputs are complete, or unwound. A command that writes files calls this
// once, right after that call. If a second signal's handler is already
// removing the run's files, this never returns (the handler _exits).
void RunEnded(bool ok);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_SIGNALS_H_
