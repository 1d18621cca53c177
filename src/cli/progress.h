// A one-line progress bar on stderr, shown only when stderr is a terminal
// (or when forced for tests), rewritten with '\r' at most ~6 times a second,
// cleared before any error line and at the end.
#ifndef ZEROFOLD_CLI_PROGRESS_H_
#define ZEROFOLD_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace zerofold::cli {

class Progress {
 public:
  // enabled: from --progress/--no-progress, else isatty(stderr).
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { Clear(); }
  // Reports `done` of `total` bytes for `label`; throttled.
  void Update(const std::string& label, uint64_t done, uint64_t total);
  // Erases the line if one is shown.
  void Clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// "1.5 GB", "820 KB", "17 B" (decimal units, as disks are sold).
std::string HumanBytes(uint64_t bytes);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_PROGRESS_H_
