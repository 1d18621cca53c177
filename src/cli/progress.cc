#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace zerofold::cli {

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

std::vector<FlagSpec> WithProgressFlags(std::vector<FlagSpec> specs) {
  specs.insert(specs.end(), {
      {"progress", false, "progress on stderr: bar (bare --progress), lines (a timestamped line every 10 s, for logs), none; default: bar on a terminal, else lines", "MODE", true},
      {"no-progress", false, "no progress (--progress=none)"},
      {"progress-interval", true, "", "SECONDS"},
  });
  return specs;
}

Result<Progress> ProgressFromFlags(const ParsedArgs& args, bool quiet, bool dry_run) {
  ProgressMode mode = quiet || dry_run ? ProgressMode::kNone : isatty(2) ? ProgressMode::kBar : ProgressMode::kLines;
  if (args.switches.count("progress")) mode = ProgressMode::kBar;
  if (std::optional<std::string> v = args.Value("progress")) {
    if (*v == "bar") mode = ProgressMode::kBar;
    else if (*v == "lines") mode = ProgressMode::kLines;
    else if (*v == "none") mode = ProgressMode::kNone;
    else return Status::InvalidArgument("--progress takes bar, lines or none, not '" + *v + "'");
  }
  if (args.Has("no-progress")) mode = ProgressMode::kNone;
  std::chrono::milliseconds interval = kProgressLineInterval;
  if (std::optional<std::string> v = args.Value("progress-interval")) {
    char* end = nullptr;
    const double secs = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(secs >= 0) || secs > 86400)
      return Status::InvalidArgument("--progress-interval needs seconds from 0 to 86400");
    interval = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
  }
  return Progress(mode, interval);
}

void Progress::Update(const std::string& label, uint64_t done, uint64_t total) {
  if (mode_ == ProgressMode::kNone) return;
  auto now = std::chrono::steady_clock::now();
  const auto since = now - last_;
  if (mode_ == ProgressMode::kBar && shown_ && done < total && since < std::chrono::milliseconds(160)) return;
  // Lines: the first after one interval, then one per interval.
  if (mode_ == ProgressMode::kLines && (shown_ ? since : now - start_) < line_interval_) return;
  last_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  if (mode_ == ProgressMode::kBar) Bar(label, done, total, rate);
  else Line(label, done, total, rate);
  shown_ = true;
}

void Progress::Bar(const std::string& label, uint64_t done, uint64_t total, double rate) {
  int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : 100;
  int filled = pct / 5;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(20, '.');
  std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %s / %s  %s/s", label.c_str(), bar.c_str(), pct,
               HumanBytes(done).c_str(), HumanBytes(total).c_str(), HumanBytes(static_cast<uint64_t>(rate)).c_str());
  std::fflush(stderr);
}

void Progress::Line(const std::string& label, uint64_t done, uint64_t total, double rate) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : 100;
  std::fprintf(stderr, "%s %s: %s of %s (%d%%), %s/s\n", stamp, label.c_str(), HumanBytes(done).c_str(),
               HumanBytes(total).c_str(), pct, HumanBytes(static_cast<uint64_t>(rate)).c_str());
  std::fflush(stderr);
}

void Progress::Clear() {
  if (!shown_ || mode_ != ProgressMode::kBar) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace zerofold::cli
