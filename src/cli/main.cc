// zerofold: command dispatch and top-level help.
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/report.h"
#include "cli/signals.h"
#include "io/process_limits.h"

namespace {

constexpr const char* kVersion = "0.1.0";

constexpr const char* kHelp =
    "zerofold: read and rewrite PyTorch checkpoints and safetensors files,\n"
    "without Python. Pickles are interpreted, never executed.\n"
    "\n"
    "usage: zerofold COMMAND [FLAGS] ARGS...\n"
    "\n"
    "commands:\n"
    "  inspect PATH...   list tensors, storages, bloat, ties and unsafe globals of\n"
    "                    torch files (zip or legacy), safetensors files, or\n"
    "                    Hugging Face model folders, or the keys of a PyTorch\n"
    "                    Distributed Checkpoint or Megatron torch_dist folder;\n"
    "                    --json for pipelines\n"
    "  scan PATH...      audit files and trees: a verdict per file (safe, unsafe,\n"
    "                    corrupt, ambiguous, not a checkpoint), bloat, what\n"
    "                    shrink would save, optimizer state; --hash: copies\n"
    "                    of identical tensor data\n"
    "  shrink IN OUT     rewrite every tensor into exactly sized storage: the\n"
    "                    fix for sharded checkpoints that each carry whole flat\n"
    "                    ZeRO/FSDP buffers; files or Hugging Face folders\n"
    "  merge CKPT OUT    rebuild the full fp32 model from a DeepSpeed ZeRO 1/2/3\n"
    "                    checkpoint (zero_to_fp32.py without Python), or full\n"
    "                    tensors from a PyTorch Distributed Checkpoint folder\n"
    "                    (FSDP, TorchTitan, Accelerate) or Megatron-Core / NeMo\n"
    "                    torch_dist checkpoint, or verl/SkyRL per-rank DTensor\n"
    "                    files, streaming;\n"
    "                    torch or safetensors output, sharded or one file\n"
    "  convert IN OUT    torch (zip or legacy) and safetensors, files or folders,\n"
    "                    to torch or safetensors: --dtype, --max-shard-size,\n"
    "                    --select, --verify\n"
    "  diff A B          compare two checkpoints tensor by tensor, across formats\n"
    "                    and layouts: names, dtypes, shapes, values (--atol,\n"
    "                    --rtol as torch.allclose); exit 0 same, 1 different\n"
    "\n"
    "Run 'zerofold COMMAND --help' (or -h) for a command's flags and examples.\n"
    "Exit codes: 0 ok, 1 bad input, 2 usage, 3 I/O error, 4 internal error\n"
    "(diff, as cmp: 1 different, 2 usage or bad input); 130, 143, 129 when\n"
    "SIGINT, SIGTERM or SIGHUP stopped the run (what it wrote is removed).\n";

}  // namespace

namespace {

int Dispatch(const std::string& command, const std::vector<std::string>& rest) {
  if (command == "inspect") return zerofold::cli::RunInspect(rest);
  if (command == "scan") {
    zerofold::io::RaiseOpenFileLimit();  // a DCP folder's data files are checked open together, as merge does
    return zerofold::cli::RunScan(rest);
  }
  if (command == "shrink") return zerofold::cli::RunShrink(rest);
  if (command == "merge") {
    zerofold::io::RaiseOpenFileLimit();
    return zerofold::cli::RunMerge(rest);
  }
  if (command == "convert") return zerofold::cli::RunConvert(rest);
  if (command == "diff") return zerofold::cli::RunDiff(rest);
  std::optional<std::string> near =
      zerofold::cli::ClosestWord(command, {"inspect", "scan", "shrink", "merge", "convert", "diff", "help"});
  return zerofold::cli::UsageError("", "unknown command '" + command + "'" +
                                           (near ? "; did you mean '" + *near + "'?" : ""));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kHelp, stderr);
    return zerofold::cli::kExitUsage;
  }
  const std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kHelp, stdout);
    return zerofold::cli::kExitOk;
  }
  if (command == "--version") {
    std::printf("zerofold %s\n", kVersion);
    return zerofold::cli::kExitOk;
  }
  const int code = Dispatch(command, rest);
  // Stopped by a signal (cli/signals.h): whatever error the run returned,
  // the exit code says which signal, as for a process the signal killed. A
  // run the signal reached after its last commit succeeded: exit 0.
  if (const int sig = zerofold::cli::CaughtSignal(); sig != 0 && code != zerofold::cli::kExitOk)
    return zerofold::cli::kExitSignalBase + sig;
  return code;
}
