// zerofold diff A B
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/limit_flags.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/signals.h"
#include "diff/diff.h"
#include "diff/json.h"
#include "zerofold/env.h"

namespace zerofold::cli {

namespace {

constexpr const char* kDiffHelp =
    "usage: zerofold diff [FLAGS] A B\n"
    "\n"
    "Compares two checkpoints tensor by tensor, whatever their formats and\n"
    "layouts: torch files (zip or legacy), safetensors files, Hugging Face\n"
    "folders (an index and its shards, or one file), a merge's output against\n"
    "another. Names are those inspect lists (dict keys joined with '.';\n"
    "safetensors names as stored). Reported: names only in A or only in B,\n"
    "dtype and shape differences, and for names in both whether the values\n"
    "are equal (xxh3-128 of the logical bytes) or, when they differ, how many\n"
    "elements differ, the first one's index, and the largest absolute and\n"
    "relative difference |a-b| / |b| (over elements both finite, in float64).\n"
    "Tensors are read in blocks, both in lockstep: memory stays bounded.\n"
    "\n"
    "Without --atol/--rtol, equal means bit for bit: -0.0 differs from 0.0,\n"
    "NaN equals only the same NaN bits, different dtypes differ. With either,\n"
    "values are compared as torch.allclose does (the other flag takes its\n"
    "default: rtol 1e-05, atol 1e-08): |a-b| <= atol + rtol*|b|, or a == b;\n"
    "NaN is never close unless --equal-nan; tensors of different dtypes are\n"
    "compared by value after widening to float64.\n"
    "\n"
    "Exit codes, as cmp and diff: 0 the same (or close), 1 different,\n"
    "2 trouble (bad flags, or an input that cannot be read as a checkpoint),\n"
    "3 I/O error (a missing file), 4 internal error.\n"
    "\n"
    "examples:\n"
    "  zerofold diff pytorch_model.bin model.safetensors\n"
    "  zerofold diff --atol 1e-3 --rtol 0 fp32/ bf16/\n"
    "  zerofold diff --only 'model.layers.0.*,lm_head.*' a.bin b/\n"
    "  zerofold diff --json merged/ reference/ | jq .tensors\n"
    "\n"
    "flags:\n";

const std::vector<FlagSpec> kDiffFlags = WithProgressFlags(WithLimitFlags({
    {"atol", true, "absolute tolerance: compare as torch.allclose (default 1e-08 once --rtol is given)", "X"},
    {"rtol", true, "relative tolerance: compare as torch.allclose (default 1e-05 once --atol is given)", "X"},
    {"equal-nan", false, "with --atol/--rtol: NaN is close to NaN"},
    {"only", true, "compare only names matching a glob (*, ?, [..]); comma-separated list", "PATTERN"},
    {"json", false, "print the comparison as JSON on stdout"},
    {"quiet", false, "print nothing; the exit code tells"},
    {"buffer-size", true, "bytes read per block of each side (default 4MiB)", "SIZE"},
    {"help", false, "show this help"},
}));

// diff's exit codes: cmp's and diff's, so 1 means "different" only.
int DiffExitCode(const Status& s) {
  const int code = ExitCodeFor(s);
  return code == kExitBadInput ? kExitUsage : code;
}

std::string Num(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string Dims(const std::vector<int64_t>& v) { return torch::ShapeText(v); }

std::string Name(const std::string& s) { return EscapeForDisplay(s, Backslash::kEscape); }

void PrintText(const diff::DiffReport& r, bool close_mode) {
  for (const std::string& n : r.only_a) std::printf("- %s: only in A\n", Name(n).c_str());
  for (const std::string& n : r.only_b) std::printf("+ %s: only in B\n", Name(n).c_str());
  for (const diff::TensorDiff& d : r.tensors) {
    const std::string name = Name(d.name);
    if (d.dtype_a != d.dtype_b && (!d.same || !d.values_compared))
      std::printf("! %s: dtype %s vs %s\n", name.c_str(), std::string(torch::Info(d.dtype_a).name).c_str(),
                  std::string(torch::Info(d.dtype_b).name).c_str());
    if (d.shape_a != d.shape_b)
      std::printf("! %s: shape %s vs %s\n", name.c_str(), Dims(d.shape_a).c_str(), Dims(d.shape_b).c_str());
    if (!d.values_compared || d.same) continue;
    std::string line = "! " + name + ": " + std::to_string(d.differing) + " of " + std::to_string(d.numel) +
                       " elements " + (close_mode ? "not close" : "differ");
    if (!d.first_index.empty() || d.shape_a.empty()) line += ", first at " + Dims(d.first_index);
    if (d.numeric) line += "; max abs diff " + Num(d.max_abs_diff) + ", max rel diff " + Num(d.max_rel_diff);
    std::printf("%s\n", line.c_str());
  }
  const size_t same = r.tensors.size() - r.different;
  std::printf("%zu tensors in both: %zu %s, %zu different; %zu only in A, %zu only in B\n", r.tensors.size(), same,
              close_mode ? "close" : "equal", r.different, r.only_a.size(), r.only_b.size());
}

// A tolerance: a finite number >= 0.
bool ParseTolerance(const std::string& text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

int RunDiff(const std::vector<std::string>& argv) {
  Result<ParsedArgs> parsed = ParseArgs(argv, kDiffFlags);
  if (!parsed.ok()) return UsageError("diff", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    std::fputs(kDiffHelp, stdout);
    std::fputs(FlagHelp(kDiffFlags).c_str(), stdout);
    return kExitOk;
  }
  if (args.positionals.size() != 2) return UsageError("diff", "needs A and B");
  diff::DiffOptions options;
  if (Status s = ApplyLimitFlags(args, &options.read); !s.ok()) return UsageError("diff", s.message());
  for (const char* flag : {"atol", "rtol"}) {
    auto v = args.Value(flag);
    if (!v) continue;
    double x = 0;
    if (!ParseTolerance(*v, &x)) return UsageError("diff", "--" + std::string(flag) + " needs a number >= 0, not '" + *v + "'");
    (std::string(flag) == "atol" ? options.atol : options.rtol) = x;
  }
  options.equal_nan = args.Has("equal-nan");
  if (options.equal_nan && !options.close_mode())
    return UsageError("diff", "--equal-nan needs --atol or --rtol (without them, NaNs are equal when their bits are)");
  if (Status s = ApplyBufferSize(args, &options.buffer_bytes); !s.ok()) return UsageError("diff", s.message());
  if (Status s = ApplyOnly(args, &options.only); !s.ok()) return UsageError("diff", s.message());
  const bool as_json = args.Has("json");
  Result<Progress> chosen = ProgressFromFlags(args, args.Has("quiet"), /*dry_run=*/false);
  if (!chosen.ok()) return UsageError("diff", chosen.status().message());
  Progress& progress = *chosen;
  const std::string label = "diff " + args.positionals[0];
  options.progress = [&](uint64_t done, uint64_t total) { progress.Update(label, done, total); };
  Result<diff::DiffReport> report = diff::DiffPaths(CommandEnv(), args.positionals[0], args.positionals[1], options);
  progress.Clear();
  if (!report.ok()) {
    if (report.status().code() == Code::kInvalidArgument) return UsageError("diff", report.status().message());
    CommandFailed(report.status(), as_json);
    return DiffExitCode(report.status());
  }
  if (as_json) {
    Result<std::string> doc = diff::DiffReportJson(*report, options);
    if (!doc.ok()) return CommandFailed(doc.status(), false);
    std::fputs(doc->c_str(), stdout);
  }
  else if (!args.Has("quiet")) PrintText(*report, options.close_mode());
  return report->same() ? kExitOk : kExitBadInput;
}

}  // namespace zerofold::cli
