// ExitCleanup: the paths to remove if the process must stop at once.
//
// A command-line front end that stops at once (cli/signals.h: a second
// SIGINT, SIGTERM or SIGHUP) cannot unwind: its signal handler removes what
// the run has put on disk, then calls _exit. This registry is the list that
// handler walks: every temp file the run has created and not yet renamed or
// removed (kTemp), and every final path a commit of the run created
// (kOutput; a file that existed before, replaced under --force or in place,
// is never registered: the run did not make it).
//
// Off unless the program turns it on (EnableProcess; the CLI does). The
// library never turns it on, installs handlers or stops: while it is off,
// Process() is null, and an Entry or Section given null does nothing.
//
// Async-signal safety. Entries are nodes of a singly linked list, pushed
// with a compare-and-swap, each with an atomic state; nodes are allocated in
// normal context and never freed while the registry lives (the process's
// lives until _exit), so a handler walking the list takes no lock and never
// reads freed memory. One node per path registered: a few hundred bytes per
// file written, for one run per process.
//
// Sections. A file created or renamed between a stop's walk and its _exit
// would stay. So each creation of a temp file and each rename that commits
// one runs in a Section, which arms the entry of the file it made: Stop()
// first makes new sections wait for the end of the process, then waits for
// the open ones to end, then walks. A section blocks the stop signals on its
// thread, so the handler never runs on a thread that is inside one (it would
// wait for itself). Nothing inside a section may allocate or take a lock
// (the thread the handler interrupted may hold it): system calls and
// Entry::Arm / Drop only.
#ifndef ZEROFOLD_IO_EXIT_CLEANUP_H_
#define ZEROFOLD_IO_EXIT_CLEANUP_H_

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace zerofold::io {

class ExitCleanup {
 public:
  enum class Kind : uint8_t {
    kTemp,    // a temp file, from its creation to its rename or removal
    kOutput,  // a file under its final name that the run created
  };
  class Entry;
  class Section;

  // `stop_signals`: the signals whose handler calls Stop(); sections block
  // them.
  explicit ExitCleanup(const sigset_t& stop_signals);
  // Frees the nodes. REQUIRES: no Entry, Section or Stop() in use.
  ~ExitCleanup();
  ExitCleanup(const ExitCleanup&) = delete;
  ExitCleanup& operator=(const ExitCleanup&) = delete;

  // The process's registry, or null while it is off (always, in the
  // library).
  static ExitCleanup* Process();
  // Turns the process's registry on (the first call's signals count) and
  // returns it. Call before any file is written, from one thread.
  static ExitCleanup* EnableProcess(const sigset_t& stop_signals);

  // Async-signal-safe. Makes every later Section wait until the process
  // ends, waits for the open sections to end, then unlinks every armed path
  // (the kOutput ones only when `outputs`), and returns how many it
  // removed. Meant to be followed by _exit: the registry is of no use after.
  size_t Stop(bool outputs) noexcept;

 private:
  struct Node;
  Node* Push(const std::string& path, Kind kind);

  std::atomic<Node*> head_{nullptr};
  std::atomic<int> open_sections_{0};
  std::atomic<bool> stopping_{false};
  sigset_t stop_signals_;
};

// One registered path. Registered unarmed: Stop() skips it until Arm().
// Thread-compatible (one owner); the registry must outlive it.
class ExitCleanup::Entry {
 public:
  Entry() = default;  // registers nothing
  // Adds `path` to `cleanup` (null: nothing). Allocates: call outside a
  // Section.
  Entry(ExitCleanup* cleanup, const std::string& path, Kind kind);
  ~Entry() { Drop(); }
  Entry(Entry&& other) noexcept : node_(other.node_) { other.node_ = nullptr; }
  Entry& operator=(Entry&& other) noexcept;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  // From now on a stop removes the path: call in the Section that created
  // the file (or renamed it into place).
  void Arm();
  // A stop no longer removes the path (renamed away, removed, or the run
  // leaves it).
  void Drop();
  // Lets go of the entry: it stays as it is (armed: removed by a stop) for
  // the registry's life.
  void Keep() { node_ = nullptr; }

 private:
  Node* node_ = nullptr;
};

// A scope in which the calling thread creates or renames a registered file
// (see Sections above). Given null: nothing. Once a stop has begun, the
// constructor does not return (the process is about to _exit).
class ExitCleanup::Section {
 public:
  explicit Section(ExitCleanup* cleanup);
  ~Section();
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

 private:
  ExitCleanup* cleanup_;
  sigset_t old_mask_;
};

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_EXIT_CLEANUP_H_
