// Progress on stderr, in one of two forms:
//   bar    one line rewritten with '\r' at most ~6 times a second, cleared
//          before any error line and at the end (for a terminal);
//   lines  a timestamped line every 10 seconds, appended (for logs: Slurm
//          and other batch systems capture stderr to a file):
//          "2025-01-31 14:02:11 shrink ckpt/: 1.2 GB of 5.0 GB (24%), 310.5 MB/s"
// --progress[=bar|lines|none] chooses; --no-progress is --progress=none;
// bare --progress forces the bar. Default: the bar when stderr is a
// terminal, else lines; none with --quiet and for dry runs.
#ifndef ZEROFOLD_CLI_PROGRESS_H_
#define ZEROFOLD_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.h"
#include "zerofold/result.h"

namespace zerofold::cli {

enum class ProgressMode { kNone, kBar, kLines };

// The interval of ProgressMode::kLines.
inline constexpr std::chrono::milliseconds kProgressLineInterval{10000};

class Progress {
 public:
  // `line_interval`: between two lines of kLines (tests shorten it).
  explicit Progress(ProgressMode mode, std::chrono::milliseconds line_interval = kProgressLineInterval)
      : mode_(mode), line_interval_(line_interval) {}
  ~Progress() { Clear(); }
  // Reports `done` of `total` bytes for `label`; throttled.
  void Update(const std::string& label, uint64_t done, uint64_t total);
  // Erases the bar if one is shown (lines stay).
  void Clear();
  bool enabled() const { return mode_ != ProgressMode::kNone; }

 private:
  void Bar(const std::string& label, uint64_t done, uint64_t total, double rate);
  void Line(const std::string& label, uint64_t done, uint64_t total, double rate);

  ProgressMode mode_;
  std::chrono::milliseconds line_interval_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// `specs` and the flags that choose progress: --progress[=MODE],
// --no-progress, and the hidden --progress-interval SECONDS (the lines'
// interval; tests).
std::vector<FlagSpec> WithProgressFlags(std::vector<FlagSpec> specs);

// The progress the flags ask for (see the top of this file). kInvalidArgument
// for a MODE other than bar, lines, none, or a bad interval.
Result<Progress> ProgressFromFlags(const ParsedArgs& args, bool quiet, bool dry_run);

// "1.5 GB", "820 KB", "17 B" (decimal units, as disks are sold).
std::string HumanBytes(uint64_t bytes);

}  // namespace zerofold::cli

#endif  // ZEROFOLD_CLI_PROGRESS_H_
