#include "io/exit_cleanup.h"

#include <time.h>
#include <unistd.h>

#include <cstring>

namespace zerofold::io {

namespace {

enum State : uint8_t { kUnarmed, kArmed, kDead };

std::atomic<ExitCleanup*> process_cleanup{nullptr};

static_assert(std::atomic<ExitCleanup*>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free && std::atomic<uint8_t>::is_always_lock_free,
              "read from signal handlers");

}  // namespace

// `next` and `path` are set before the node is pushed and never change
// after; `state` goes kUnarmed -> kArmed -> kDead, or straight to kDead.
struct ExitCleanup::Node {
  std::atomic<Node*> next{nullptr};
  std::atomic<uint8_t> state{kUnarmed};
  Kind kind = Kind::kTemp;
  char* path = nullptr;  // NUL-terminated, owned
};

ExitCleanup::ExitCleanup(const sigset_t& stop_signals) : stop_signals_(stop_signals) {}

ExitCleanup::~ExitCleanup() {
  Node* n = head_.load();
  while (n != nullptr) {
    Node* next = n->next.load();
    delete[] n->path;
    delete n;
    n = next;
  }
}

ExitCleanup* ExitCleanup::Process() { return process_cleanup.load(std::memory_order_acquire); }

ExitCleanup* ExitCleanup::EnableProcess(const sigset_t& stop_signals) {
  if (ExitCleanup* on = Process()) return on;
  ExitCleanup* cleanup = new ExitCleanup(stop_signals);  // never destroyed: a handler may walk it until _exit
  process_cleanup.store(cleanup, std::memory_order_release);
  return cleanup;
}

ExitCleanup::Node* ExitCleanup::Push(const std::string& path, Kind kind) {
  Node* n = new Node;
  n->kind = kind;
  n->path = new char[path.size() + 1];
  std::memcpy(n->path, path.c_str(), path.size() + 1);
  Node* head = head_.load(std::memory_order_relaxed);
  do {
    n->next.store(head, std::memory_order_relaxed);
  } while (!head_.compare_exchange_weak(head, n, std::memory_order_release, std::memory_order_relaxed));
  return n;
}

size_t ExitCleanup::Stop(bool outputs) noexcept {
  stopping_.store(true);  // sequentially consistent with Section's count and check
  while (open_sections_.load() != 0) {
    struct timespec pause_for = {0, 100 * 1000};  // 100 us: a section holds one open() or rename()
    ::nanosleep(&pause_for, nullptr);
  }
  size_t removed = 0;
  for (Node* n = head_.load(std::memory_order_acquire); n != nullptr; n = n->next.load(std::memory_order_acquire)) {
    if (n->state.load() != kArmed || (n->kind == Kind::kOutput && !outputs)) continue;
    if (::unlink(n->path) == 0) ++removed;
  }
  return removed;
}

ExitCleanup::Entry::Entry(ExitCleanup* cleanup, const std::string& path, Kind kind)
    : node_(cleanup == nullptr ? nullptr : cleanup->Push(path, kind)) {}

ExitCleanup::Entry& ExitCleanup::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    Drop();
    node_ = other.node_;
    other.node_ = nullptr;
  }
  return *this;
}

void ExitCleanup::Entry::Arm() {
  if (node_ != nullptr) node_->state.store(kArmed);
}

void ExitCleanup::Entry::Drop() {
  if (node_ != nullptr) node_->state.store(kDead);
  node_ = nullptr;
}

ExitCleanup::Section::Section(ExitCleanup* cleanup) : cleanup_(cleanup) {
  if (cleanup_ == nullptr) return;
  ::pthread_sigmask(SIG_BLOCK, &cleanup_->stop_signals_, &old_mask_);
  cleanup_->open_sections_.fetch_add(1);
  if (cleanup_->stopping_.load()) {
    // A stop has begun and may have walked the list already: what this
    // section would make could stay. Wait for its _exit.
    cleanup_->open_sections_.fetch_sub(1);
    for (;;) ::pause();
  }
}

ExitCleanup::Section::~Section() {
  if (cleanup_ == nullptr) return;
  cleanup_->open_sections_.fetch_sub(1);
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace zerofold::io
