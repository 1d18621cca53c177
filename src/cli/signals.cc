#include "cli/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "cli/exit_codes.h"
#include "io/cancel_env.h"

namespace zerofold::cli {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

io::CancelFlag caught{0};

// Async-signal-safe: one atomic exchange, or _exit.
extern "C" void OnStopSignal(int sig) {
  if (caught.exchange(sig) != 0) _exit(kExitSignalBase + sig);  // the second signal: stop now
}

std::string Why(int sig) {
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
  return std::string("interrupted by ") + name;
}

void Install() {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  for (int sig : kStopSignals) {
    // A signal the shell ignores (nohup, a background job's SIGINT) stays ignored.
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &action, nullptr);
  }
}

}  // namespace

Env* CommandEnv() {
  static io::CancelEnv* env = [] {
    Install();
    return new io::CancelEnv(Env::Default(), &caught, Why);
  }();
  return env;
}

int CaughtSignal() { return caught.load(); }

}  // namespace zerofold::cli
