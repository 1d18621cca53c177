// zerofold scan PATH... [--json] [--hash]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/limit_flags.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/signals.h"
#include "pickle/safety.h"
#include "scan/json.h"
#include "scan/scan.h"

namespace zerofold::cli {

namespace {

constexpr const char* kScanHelp =
    "usage: zerofold scan [--json] [--hash] PATH...\n"
    "\n"
    "Audits files and folder trees: every file under each PATH gets one\n"
    "verdict, and no file is skipped: a file no reader takes is listed as\n"
    "\"not a checkpoint\". Files are judged by their bytes whatever their\n"
    "names (torch zip or legacy files, safetensors files, pickles, Hugging\n"
    "Face index files against their shards, PyTorch Distributed Checkpoint\n"
    "and Megatron torch_dist folders through their .metadata, DeepSpeed\n"
    "folders' *_states.pt files). Verdicts:\n"
    "  safe              read; names no global that would run code\n"
    "  unsafe            names globals torch.load would run (listed; never run)\n"
    "  corrupt           the reader refused it (the error line says why)\n"
    "  ambiguous         torch and zerofold could read it differently\n"
    "  unreadable        the system failed a read\n"
    "  not a checkpoint  no torch, safetensors or pickle bytes\n"
    "Per file: its size, the bytes its storages hold and the bytes their views\n"
    "reference, what `zerofold shrink` would save (from shrink's own plan),\n"
    "and its optimizer-state bytes: tensors under a top-level key optimizer,\n"
    "optim, optimizer_state_dict, optimizer_states or optimizers, or at\n"
    "...state.PARAM.NAME with NAME a torch.optim state (exp_avg, exp_avg_sq,\n"
    "step, momentum_buffer, ...). Then the totals.\n"
    "\n"
    "Only directories, pickles and headers are read, unless --hash: it reads\n"
    "every tensor's bytes and reports identical copies (within and across\n"
    "files, by the xxh3-128 of the bytes; tied tensors count once) with the\n"
    "bytes the extra copies waste.\n"
    "\n"
    "--json: one JSON object per line, one per file, then the totals\n"
    "(schema in README.md).\n"
    "\n"
    "Exit codes: 0 every file safe or not a checkpoint; 1 a file is unsafe,\n"
    "corrupt or ambiguous; 2 usage; 3 a PATH is missing or a read failed\n"
    "(the largest applies).\n"
    "\n"
    "flags:\n";

const std::vector<FlagSpec> kScanFlags = WithProgressFlags(WithLimitFlags({
    {"json", false, "one JSON object per line: each file, then the totals"},
    {"hash", false, "read every tensor and report copies of identical data (a full read)"},
    {"buffer-size", true, "bytes read per hashing read (default 4MiB)", "SIZE"},
    {"help", false, "show this help"},
}));

std::string Shown(std::string_view text) { return EscapeForDisplay(text, Backslash::kEscape); }

void PrintFile(const scan::FileResult& r) {
  std::string line = std::string(scan::VerdictName(r.verdict));
  line.resize(std::max<size_t>(line.size() + 1, 18), ' ');
  line += Shown(r.path);
  if (r.verdict == scan::Verdict::kNotCheckpoint) {
    std::printf("%s (%s, %s)\n", line.c_str(), HumanBytes(r.file_bytes).c_str(), Shown(r.note).c_str());
    return;
  }
  std::string detail = r.format.empty() ? "" : r.format + ", ";
  detail += HumanBytes(r.file_bytes);
  if (r.tensors) {
    detail += ", " + std::to_string(r.tensors) + " tensors, stored " + HumanBytes(r.stored_bytes) + ", referenced " +
              HumanBytes(r.referenced_bytes);
  }
  if (r.shrink_saves) detail += ", shrink saves " + HumanBytes(*r.shrink_saves);
  if (r.optimizer_bytes) detail += ", optimizer state " + HumanBytes(r.optimizer_bytes);
  std::printf("%s (%s)\n", line.c_str(), detail.c_str());
  if (!r.unsafe_globals.empty())
    std::printf("  unsafe globals (never run by zerofold; torch.load would run them): %s\n",
                Shown(pickle::DescribeUnsafe(r.unsafe_globals)).c_str());
  if (!r.error.ok()) std::printf("  %s\n", r.error.ToString().c_str());
}

void PrintTotals(const scan::Totals& t) {
  std::string counts;
  for (size_t v = 0; v < std::size(t.by_verdict); ++v) {
    if (t.by_verdict[v] == 0) continue;
    counts += (counts.empty() ? "" : ", ") + std::to_string(t.by_verdict[v]) + " " +
              std::string(scan::VerdictName(static_cast<scan::Verdict>(v)));
  }
  std::printf("\n%llu files, %s: %s\n", static_cast<unsigned long long>(t.files), HumanBytes(t.file_bytes).c_str(),
              counts.empty() ? "none" : counts.c_str());
  std::printf("stored %s, referenced %s; shrink would save %s; optimizer state %s\n",
              HumanBytes(t.stored_bytes).c_str(), HumanBytes(t.referenced_bytes).c_str(),
              HumanBytes(t.shrink_saves).c_str(), HumanBytes(t.optimizer_bytes).c_str());
  if (!t.hashed) return;
  std::printf("duplicates: %zu groups of identical tensor data, %s wasted\n", t.duplicates.size(),
              HumanBytes(t.duplicate_wasted_bytes).c_str());
  for (const scan::DuplicateGroup& g : t.duplicates) {
    std::printf("  %zu copies of %s (%s wasted):\n", g.copies.size(), HumanBytes(g.nbytes).c_str(),
                HumanBytes(g.wasted()).c_str());
    for (const std::string& c : g.copies) std::printf("    %s\n", Shown(c).c_str());
  }
}

}  // namespace

int RunScan(const std::vector<std::string>& argv) {
  Result<ParsedArgs> parsed = ParseArgs(argv, kScanFlags);
  if (!parsed.ok()) return UsageError("scan", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    std::fputs(kScanHelp, stdout);
    std::fputs(FlagHelp(kScanFlags).c_str(), stdout);
    return kExitOk;
  }
  if (args.positionals.empty()) return UsageError("scan", "needs at least one PATH");
  scan::ScanOptions options;
  if (Status s = ApplyLimitFlags(args, &options.read); !s.ok()) return UsageError("scan", s.message());
  if (Status s = ApplyBufferSize(args, &options.buffer_bytes); !s.ok()) return UsageError("scan", s.message());
  options.hash = args.Has("hash");
  const bool as_json = args.Has("json");
  Result<Progress> chosen = ProgressFromFlags(args, /*quiet=*/false, /*dry_run=*/false);
  if (!chosen.ok()) return UsageError("scan", chosen.status().message());
  Progress& progress = *chosen;
  if (progress.enabled())
    options.progress = [&](const std::string& path, uint64_t done, uint64_t total) {
      progress.Update("scan " + path, done, total);
    };
  int worst = kExitOk;
  bool broken = false;  // a line could not be written: a zerofold bug
  Result<scan::Totals> totals = scan::Scan(CommandEnv(), args.positionals, options, [&](const scan::FileResult& r) {
    worst = std::max(worst, ExitCodeFor(scan::ResultStatus(r)));
    progress.Clear();
    if (!as_json) {
      PrintFile(r);
      return Status::OK();
    }
    Result<std::string> line = scan::FileJsonLine(r);
    if (line.ok()) std::fputs(line->c_str(), stdout);
    else broken = true;
    return Status::OK();
  });
  progress.Clear();
  if (!totals.ok()) return CommandFailed(totals.status(), false);
  if (as_json) {
    Result<std::string> line = scan::TotalsJsonLine(*totals);
    if (!line.ok() || broken) {
      PrintError(Status::Internal("--json line: " + (line.ok() ? std::string("a file's") : line.status().message())));
      return kExitInternal;
    }
    std::fputs(line->c_str(), stdout);
  } else {
    PrintTotals(*totals);
  }
  return worst;
}

}  // namespace zerofold::cli
