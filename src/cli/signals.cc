#include "cli/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "cli/exit_codes.h"
#include "io/cancel_env.h"
#include "io/exit_cleanup.h"

namespace zerofold::cli {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

io::CancelFlag caught{0};

// Where the run is, for a second signal. kRunning until RunEnded(); a second
// signal's handler moves kRunning to kStopping, and then owns the exit.
enum RunState : int { kRunning, kSucceeded, kFailed, kStopping };
std::atomic<int> run_state{kRunning};
static_assert(std::atomic<int>::is_always_lock_free, "read from signal handlers");

const char* SignalName(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

// Async-signal-safe: appends `text` to the buffer at `*at`, as room allows.
void Put(char* buf, size_t size, size_t* at, const char* text) {
  size_t n = strlen(text);
  if (n > size - *at) n = size - *at;
  memcpy(buf + *at, text, n);
  *at += n;
}

// Waits for the process to end (another thread is ending it).
[[noreturn]] void Hang() {
  for (;;) pause();
}

// The second signal (the handler blocks the stop signals, so this runs on
// one thread at a time; another thread's handler that finds kStopping
// waits for this one's _exit). Async-signal-safe.
[[noreturn]] void StopAtOnce(int sig) {
  int state = kRunning;
  const bool running = run_state.compare_exchange_strong(state, kStopping);
  if (!running && state == kStopping) Hang();
  // While the run goes on, its files under final names are incomplete, or
  // complete without the rest: all go. Once it is over they stay.
  if (io::ExitCleanup* cleanup = io::ExitCleanup::Process()) cleanup->Stop(/*outputs=*/running);
  char line[160];
  size_t at = 0;
  Put(line, sizeof line, &at, "zerofold: interrupted again by ");
  Put(line, sizeof line, &at, SignalName(sig));
  Put(line, sizeof line, &at,
      running ? ": stopped at once; removed what this run had written\n"
              : state == kSucceeded ? ": stopped at once; the run had completed\n" : ": stopped at once\n");
  ssize_t ignored = write(STDERR_FILENO, line, at);
  (void)ignored;
  _exit(state == kSucceeded ? kExitOk : kExitSignalBase + sig);
}

extern "C" void OnStopSignal(int sig) {
  if (caught.exchange(sig) != 0) StopAtOnce(sig);  // the first signal only sets the token
}

std::string Why(int sig) { return std::string("interrupted by ") + SignalName(sig); }

void Install() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : kStopSignals) sigaddset(&stop_signals, sig);
  io::ExitCleanup::EnableProcess(stop_signals);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  action.sa_mask = stop_signals;  // no handler runs inside another on one thread
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

void RunEnded(bool ok) {
  int state = kRunning;
  if (!run_state.compare_exchange_strong(state, ok ? kSucceeded : kFailed) && state == kStopping) Hang();
}

}  // namespace zerofold::cli
