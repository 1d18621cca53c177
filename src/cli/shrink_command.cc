// zerofold shrink IN OUT, zerofold convert IN OUT: one parser, one request.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/limit_flags.h"
#include "cli/part_flag.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/signals.h"
#include "cli/shrink_convert.h"
#include "rewrite/request.h"
#include "io/zstd_stream.h"
#include "model/listing_json.h"
#include "rewrite/cast.h"
#include "rewrite/shrink.h"
#include "zerofold/env.h"

namespace zerofold::cli {

namespace {

constexpr const char* kShrinkHelp =
    "usage: zerofold shrink [FLAGS] IN OUT\n"
    "       zerofold shrink --in-place [FLAGS] IN\n"
    "\n"
    "Rewrites every tensor into exactly sized storage. When params are views\n"
    "into one big flat buffer (DeepSpeed ZeRO-1/2, FSDP) and a model is saved in\n"
    "shards, every shard carries the whole buffer; shrink keeps only the bytes\n"
    "each file's tensors reference. Tensors whose bytes overlap (tied weights,\n"
    "views of views) keep sharing one storage. A storage is split only where\n"
    "that makes the file smaller (each new record costs headers and padding),\n"
    "else kept whole; an input the rewrite would not make smaller is copied\n"
    "unchanged (--in-place: left untouched), so the output is never larger\n"
    "than the input (also for a deflated zip: its rewrite is stored). --to,\n"
    "--dtype and --select convert: the target format, every storage exactly\n"
    "sized; --select of one tensor writes {KEY: tensor}. Tensor bytes are\n"
    "streamed, never held in memory.\n"
    "\n"
    "IN is a torch file (zip or legacy format) and OUT a file, or IN is a\n"
    "Hugging Face folder with pytorch_model.bin.index.json and OUT a folder:\n"
    "every shard is shrunk, the index keeps its weight_map, other files (config,\n"
    "tokenizer) are copied. Inputs are never modified without --in-place, which\n"
    "replaces each file atomically, one at a time. Temp files that killed runs\n"
    "left in an output folder are removed, with a note on stderr.\n"
    "\n"
    "IN or OUT may be - (standard input or output) or a name ending in .zst\n"
    "(zstd, decompressed or compressed on the fly; standard input is\n"
    "decompressed when it starts with a zstd frame). Such input is read in one\n"
    "forward pass, which works for archives laid out as torch.save writes them;\n"
    "the output is the same bytes as from a file path. Binary output to a\n"
    "terminal is refused.\n"
    "OUT (the same for shrink, convert and merge): '-' is standard output; a\n"
    "name ending in '/' or an existing folder is a folder, as is, when IN is a\n"
    "folder, a name that says no format (one with an unknown extension, such\n"
    "as model.st, is refused); any other name is a file whose extension says\n"
    "its format: .safetensors, or .bin .pt .pth .ckpt for torch, X.zst X's\n"
    "compressed. --to contradicting the name, and --max-shard-size or --part\n"
    "with an OUT that is no folder, are refused. Every file the run would\n"
    "write (the OUT file; in a folder its weights, index and copies) or remove\n"
    "(an earlier save's other shards) is refused if it exists, without --force,\n"
    "before anything is read; too little free disk for the planned output is\n"
    "refused up front (exit 3); a failed run removes what it made.\n"
    "A folder IN gives one file only as safetensors. A folder gets\n"
    "transformers' layout: pytorch_model.bin or model.safetensors, or past\n"
    "--max-shard-size HF shards (pytorch_model-00001-of-0000N.bin,\n"
    "model-00001-of-0000N.safetensors) and an index. safetensors output writes\n"
    "every tensor contiguous under its name; tied names are all written unless\n"
    "--dedupe-tied (dropped names recorded in __metadata__ \"zerofold.tied\");\n"
    "plain non-tensor values go into __metadata__ as JSON text.\n"
    "\n"
    "Past one machine, --part I/N (I = 0..N-1) writes only part I of the files\n"
    "of a folder OUT (a folder IN's shards, a file IN's --max-shard-size\n"
    "shards, --to safetensors shards: whole files balanced by bytes, every part\n"
    "plans the same), and no index or copies. Files already complete are\n"
    "skipped (--verify checks them), so a rerun redoes only what is missing; a\n"
    "file of the part with another size is refused (--force rewrites the part's\n"
    "files). --part finish then checks every file and writes the copies and\n"
    "the index (and removes an earlier save's other shards where one run does:\n"
    "new shards from a file IN or --to safetensors). Give every part and finish\n"
    "the same flags. Not with --in-place or a file OUT.\n"
    "Job arrays: examples/slurm/shrink.sbatch.\n"
    "\n"
    "examples:\n"
    "  zerofold shrink ckpt/ small/                 # a sharded HF folder\n"
    "  zerofold shrink --dry-run model.bin x.bin    # show what would change\n"
    "  zerofold shrink --in-place ckpt/             # replace each shard\n"
    "  curl -s URL | zerofold shrink - - > small.pt # a pipe, in one pass\n"
    "  zerofold shrink model.pt small.pt.zst        # compress the output\n"
    "  zerofold shrink --to safetensors ckpt/ st/   # HF folder as safetensors\n"
    "  zerofold shrink --select module --dtype bfloat16 mp_rank_00_model_states.pt w.bin\n"
    "\n"
    "flags:\n";

constexpr const char* kConvertHelp =
    "usage: zerofold convert [FLAGS] IN OUT\n"
    "\n"
    "Writes the tensors of IN in another format, dtype, sharding or selection.\n"
    "IN is a torch file (zip or legacy format), a safetensors file, or a Hugging\n"
    "Face folder (pytorch_model.bin.index.json or model.safetensors.index.json\n"
    "and its shards, or one pytorch_model.bin or model.safetensors).\n"
    "The output format is --to, else OUT's extension: .safetensors, or .bin,\n"
    ".pt, .pth, .ckpt for torch (X.zst: X's, compressed); a folder OUT needs\n"
    "--to, and --to contradicting the name is refused. OUT is a folder when it\n"
    "is an existing folder or ends with '/', or when IN is a folder and OUT has\n"
    "none of those extensions; a folder is written in transformers' layout, and\n"
    "existing outputs need --force (see shrink --help). A folder IN gives one\n"
    "safetensors file for an OUT named X.safetensors.\n"
    "\n"
    "torch output: every tensor in exactly sized storage, tied weights sharing\n"
    "one storage, as shrink writes it (legacy input becomes a zip archive);\n"
    "safetensors input gives one storage per tensor, as torch.save of the\n"
    "state dict safetensors.torch.load_file returns (an OrderedDict by name).\n"
    "A safetensors folder becomes torch shards of the same numbers.\n"
    "safetensors output: every name contiguous (ties written per name unless\n"
    "--dedupe-tied), plain non-tensor values and a safetensors input's\n"
    "__metadata__ in __metadata__.\n"
    "\n"
    "Streams: IN or OUT - (standard input or output) or X.zst work where the\n"
    "formats allow one forward pass: torch to torch (a stream in, a stream\n"
    "out), and a file IN to one safetensors OUT stream. A safetensors IN must\n"
    "be a file (its tensors are found by offsets), and safetensors output from\n"
    "a stream IN is refused (its header lists every tensor before their bytes):\n"
    "save the stream to a file first. --verify needs file outputs.\n"
    "\n"
    "--part I/N and --part finish divide the files of a folder OUT among the\n"
    "tasks of a job array, as for shrink (see shrink --help).\n"
    "\n"
    "--dequantize [bf16|fp32] (bare: bf16) decodes a quantized checkpoint: a\n"
    "Hugging Face folder (config.json's quantization_config says the scheme)\n"
    "or one safetensors file (the tensor names must say it): DeepSeek FP8\n"
    "blocks (weight_scale_inv), gpt-oss MXFP4 (_blocks, _scales), NVFP4\n"
    "(ModelOpt, compressed-tensors), compressed-tensors pack-quantized INT1-8,\n"
    "int-quantized INT8 and float-quantized FP8, DeepSeek-V4 FP4 experts (I8 +\n"
    "E8M0 .scale). Each weight's group becomes one tensor, decoded\n"
    "in float32 and rounded to nearest even; other tensors are kept bit for\n"
    "bit; config.json loses quantization_config. Output is safetensors, or\n"
    "torch with --to torch or a torch OUT name.\n"
    "\n"
    "examples:\n"
    "  zerofold convert model.safetensors pytorch_model.bin\n"
    "  zerofold convert pytorch_model.bin model.safetensors --verify\n"
    "  zerofold convert --to safetensors --max-shard-size 2GB ckpt/ st/\n"
    "  zerofold convert old_legacy.pt new.pt             # legacy -> zip\n"
    "  zerofold convert --dtype bfloat16 model.safetensors m16.safetensors\n"
    "  zerofold convert --select module mp_rank_00_model_states.pt w.safetensors\n"
    "  zerofold convert --to safetensors --part 3/8 ckpt/ st/   # then --part finish\n"
    "  zerofold convert --dequantize bf16 DeepSeek-V3/ DeepSeek-V3-bf16/\n"
    "\n"
    "flags:\n";

const FlagSpec kInPlaceFlag = {"in-place", false, "replace the input (each file atomically: temp file, fsync, rename)"};

const std::vector<FlagSpec> kConvertFlags = WithProgressFlags(WithLimitFlags({
    {"dry-run", false, "print the plan (bytes before/after, storages split); write nothing"},
    {"force", false, "replace existing output files (and an earlier save in a folder OUT)"},
    {"verify", false, "read the output back before it replaces its target; compare every tensor's xxh3-128 with the input's"},
    {"keep-unsafe", false, "carry unsafe pickle globals through unchanged (never run; --to safetensors: write the tensors anyway) instead of refusing"},
    {"json", false, "print a JSON summary on stdout"},
    {"quiet", false, "print nothing but errors"},
    {"buffer-size", true, "bytes copied per read (default 4MiB)", "SIZE"},
    {"zstd-level", true, "compression level of .zst output, 1-19 (default 3)", "N"},
    {"zstd-threads", true, "threads compressing .zst output besides the main one (default 0)", "N"},
    {"zstd-window-log-max", true, "largest window of .zst input, as a power of two (default 27)", "N"},
    {"to", true, "output format: torch (default) or safetensors", "FORMAT"},
    {"max-shard-size", true, "shard a folder OUT past this much tensor data (default 5GB)", "SIZE"},
    {"dtype", true, "cast floating tensors as torch's .to() does: bfloat16 (bf16), float16 (fp16, half), float32 (fp32, float)", "DTYPE"},
    {"select", true, "write only the subtree at KEYPATH (keys joined by '/', e.g. module)", "KEYPATH"},
    {"only", true, "write only tensors whose names match a glob (*, ?, [..]); comma-separated list; ties follow", "PATTERN"},
    {"dedupe-tied", false, "safetensors: write tied names once, record the others in __metadata__"},
    {"dequantize", false, "decode quantized weights (FP8 block, MXFP4, NVFP4, INT1-8, FP8, DeepSeek-V4 FP4) to bf16 (default) or fp32", "DTYPE", true},
    PartFlagSpec(),
    {"help", false, "show this help"},
}));

std::vector<FlagSpec> ShrinkFlags() {
  std::vector<FlagSpec> flags = kConvertFlags;
  std::erase_if(flags, [](const FlagSpec& f) { return f.name == "dequantize"; });
  flags.insert(flags.begin() + 1, kInPlaceFlag);
  return flags;
}

const std::vector<FlagSpec> kShrinkFlags = ShrinkFlags();

// `complete`: a --part run found the output complete and did not rewrite it.
void PrintReport(std::FILE* out, const rewrite::ShrinkReport& r, bool dry_run, bool complete) {
  std::fprintf(out, "%s -> %s: %s -> %s (%zu tensors, %zu -> %zu storages)%s\n",
               EscapeForDisplay(r.input, Backslash::kEscape).c_str(), EscapeForDisplay(r.output, Backslash::kEscape).c_str(),
               HumanBytes(r.input_file_bytes).c_str(), HumanBytes(r.output_file_bytes).c_str(), r.tensors,
               r.storages_before, r.storages_after,
               complete ? " [already complete, skipped]" : dry_run ? " [dry run]" : "");
  if (r.copied_unchanged)
    std::fprintf(out, "  already compact: %s\n", r.input == r.output ? "left untouched" : "copied unchanged");
  if (dry_run)
    for (const std::string& c : r.changed_storages)
      std::fprintf(out, "  storage %s\n", EscapeForDisplay(c, Backslash::kEscape).c_str());
  for (const std::string& k : r.kept_whole)
    std::fprintf(out, "  storage %s\n", EscapeForDisplay(k, Backslash::kEscape).c_str());
  for (const std::string& g : r.unsafe_globals)
    PrintWarning(r.input, "carried unsafe global " + g + " through unexecuted (--keep-unsafe)");
}

void WriteReportJson(json::Writer& w, const rewrite::ShrinkReport& r) {
  w.BeginObject();
  w.Key("input");
  w.String(r.input);
  w.Key("output");
  w.String(r.output);
  w.Key("input_bytes");
  w.Uint(r.input_file_bytes);
  w.Key("output_bytes");
  w.Uint(r.output_file_bytes);
  w.Key("stored_bytes_before");
  w.Uint(r.stored_before);
  w.Key("stored_bytes_after");
  w.Uint(r.stored_after);
  w.Key("tensors");
  w.Uint(r.tensors);
  w.Key("storages_before");
  w.Uint(r.storages_before);
  w.Key("storages_after");
  w.Uint(r.storages_after);
  w.Key("changed_storages");
  w.Strings(r.changed_storages);
  w.Key("kept_whole");
  w.Strings(r.kept_whole);
  w.Key("copied_unchanged");
  w.Bool(r.copied_unchanged);
  model::WriteUnsafeGlobals(w, r.unsafe_globals);
  if (r.verified) WriteVerified(w, r.verified_tensors, r.verified_bytes);
  w.EndObject();
}


// `--dequantize DTYPE` as `--dequantize=DTYPE` when DTYPE names a dtype
// (rewrite::ParseCastTarget): the parser takes a bare --dequantize as a
// switch, so a value after a space would be a positional; IN is never
// taken (a file named like a dtype: --dequantize=bf16 ./bf16).
std::vector<std::string> JoinDequantizeValue(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {
      out.insert(out.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
      break;
    }
    if (argv[i] == "--dequantize" && i + 1 < argv.size() && rewrite::ParseCastTarget(argv[i + 1])) {
      out.push_back(argv[i] + "=" + argv[i + 1]);
      ++i;
      continue;
    }
    out.push_back(argv[i]);
  }
  return out;
}

// shrink and convert: one parser, one request, one path (rewrite/request.h).
int RunRewrite(const char* command, bool convert, const std::vector<std::string>& argv) {
  const std::vector<FlagSpec>& flags = convert ? kConvertFlags : kShrinkFlags;
  Result<ParsedArgs> parsed = ParseArgs(convert ? JoinDequantizeValue(argv) : argv, flags);
  if (!parsed.ok()) return UsageError(command, parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    std::fputs(convert ? kConvertHelp : kShrinkHelp, stdout);
    std::fputs(FlagHelp(flags).c_str(), stdout);
    return kExitOk;
  }
  const bool in_place = args.Has("in-place");
  const size_t want = in_place ? 1 : 2;
  if (args.positionals.size() != want)
    return UsageError(command, in_place ? "--in-place takes one path, IN" : "needs IN and OUT");
  const std::string in = args.positionals[0];
  const std::string out = in_place ? in : args.positionals[1];

  rewrite::ShrinkOptions options;
  options.keep_unsafe = args.Has("keep-unsafe");
  options.dry_run = args.Has("dry-run");
  if (Status s = ApplyLimitFlags(args, &options.read); !s.ok()) return UsageError(command, s.message());
  options.verify = args.Has("verify");
  if (Status s = ApplyBufferSize(args, &options.buffer_bytes); !s.ok()) return UsageError(command, s.message());
  for (const char* name : {"zstd-level", "zstd-threads", "zstd-window-log-max"}) {
    auto v = args.Value(name);
    if (!v) continue;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
    Status set = v->empty() || *end != '\0' || (*v)[0] == '-'
                     ? io::SetZstdOption(&options.zstd, name, UINT64_MAX)  // out of range: the message
                     : io::SetZstdOption(&options.zstd, name, n);
    if (!set.ok()) return UsageError(command, "--" + set.message());
  }
  // Flags whose values need parsing.
  rewrite::ShrinkRequest request;
  if (auto to = args.Value("to")) {
    if (*to != "torch" && *to != "safetensors")
      return UsageError(command, "--to takes torch or safetensors, not '" + *to + "'");
    request.to = *to == "safetensors" ? output::ShardFormat::kSafetensors : output::ShardFormat::kTorch;
  }
  if (auto name = args.Value("dtype")) {
    options.dtype = rewrite::ParseCastTarget(*name);
    if (!options.dtype) return UsageError(command, "--dtype takes " + std::string(rewrite::kCastTargetNames) + ", not '" + *name + "'");
  }
  if (args.Has("dequantize")) {
    const std::string name = args.Value("dequantize").value_or("bf16");
    const std::optional<torch::DType> d = rewrite::ParseCastTarget(name);
    if (d == torch::DType::kBFloat16) request.dequantize = quant::Target::kBFloat16;
    else if (d == torch::DType::kFloat32) request.dequantize = quant::Target::kFloat32;
    else return UsageError(command, "--dequantize takes bf16 (bfloat16) or fp32 (float32), not '" + name + "'");
  }
  options.select = args.Value("select").value_or("");
  if (Status s = ApplyOnly(args, &options.only); !s.ok()) return UsageError(command, s.message());
  if (auto v = args.Value("max-shard-size")) {
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok() || *n == 0) return UsageError(command, "--max-shard-size needs a size such as 5GB, 500MB or 2GiB");
    request.max_shard_bytes = *n;
  }
  // Standard output carrying the archive takes no JSON, and neither end
  // of the archive is a terminal.
  const bool to_stdout = out == io::kStdioName;
  const bool as_json = args.Has("json");
  if (to_stdout && as_json && !options.dry_run)
    return UsageError(command, "--json prints on standard output, which OUT - takes for the archive");
  if (to_stdout && !options.dry_run && isatty(1))
    return UsageError(command, "refusing to write binary data to a terminal; redirect standard output or name a file");
  if (in == io::kStdioName && isatty(0))
    return UsageError(command, "refusing to read binary data from a terminal; pipe the input or name a file");
  const bool quiet = args.Has("quiet");
  // A dry run's --json lists the reads the run would make.
  io::ReadPlan reads;
  if (as_json && options.dry_run) options.read_plan = &reads;
  if (Result<output::PartSpec> part = ApplyPartFlag(args); part.ok()) request.part = *part;
  else return UsageError(command, part.status().message());
  Result<Progress> chosen = ProgressFromFlags(args, quiet, options.dry_run);
  if (!chosen.ok()) return UsageError(command, chosen.status().message());
  Progress& progress = *chosen;
  // A folder's run names the file it writes: "shrink ckpt/ (file 2 of 5)".
  options.progress = [&](const output::SetProgress& p) {
    std::string label = std::string(p.verifying ? "verify" : command) + " " + in;
    if (p.files > 1) label += " (file " + std::to_string(p.file + 1) + " of " + std::to_string(p.files) + ")";
    progress.Update(label, p.done, p.total);
  };
  // A folder's result lines as each shard completes (the totals at the end).
  std::FILE* text_out = to_stdout ? stderr : stdout;
  const bool finish = request.part.kind == output::PartSpec::Kind::kFinish;
  size_t printed = 0;
  if (!as_json && !quiet && !finish) {
    options.file_done = [&](const rewrite::ShrinkReport& r, bool skipped) {
      progress.Clear();
      PrintReport(text_out, r, options.dry_run, skipped);
      std::fflush(text_out);
      ++printed;
    };
  }

  request.convert = convert;
  request.in = in;
  request.out = out;
  request.in_place = in_place;
  request.force = args.Has("force");
  request.dedupe_tied = args.Has("dedupe-tied");
  request.options = options;
  Env* env = CommandEnv();
  if (Status s = rewrite::CheckShrinkRequest(env, request, rewrite::kFlagWords); !s.ok()) {
    // Refusals of the flags are usage errors; those naming a file (output/target.h) print as merge's do.
    if (s.code() == Code::kInvalidArgument && s.path().empty()) return UsageError(command, s.message());
    PrintError(s);
    return ExitCodeFor(s);
  }
  Result<rewrite::ShrinkOutcome> outcome = rewrite::RunShrink(env, request);
  RunEnded(outcome.ok());
  progress.Clear();
  const std::vector<std::string> removed_temps = NoteRemovedTempFiles(env);
  if (!outcome.ok()) return CommandFailed(outcome.status(), as_json);
  if (outcome->converted) {
    PrintConvertReport(*outcome->converted, request.part, options.dry_run, quiet || as_json, to_stdout);
    if (outcome->dequantized && !quiet && !as_json) PrintDequantizeSummary(*outcome->dequantized);
    if (as_json) std::printf("%s\n", ConvertReportJson(*outcome->converted, request.part, options.dry_run,
                                                     outcome->dequantized ? &*outcome->dequantized : nullptr,
                                                     options.read_plan).c_str());
    return kExitOk;
  }
  const std::vector<rewrite::ShrinkReport>& reports = outcome->files;
  if (as_json) {
    json::Writer w = model::NewJsonWriter();
    w.BeginObject();
    w.Key("dry_run");
    w.Bool(options.dry_run);
    if (options.read_plan != nullptr) WriteReadsJson(w, *options.read_plan);
    w.Key("files");
    w.BeginArray();
    for (const rewrite::ShrinkReport& r : reports) WriteReportJson(w, r);
    w.EndArray();
    WritePartsJson(w, request.part, outcome->parts);
    w.Key("removed_temp_files");
    w.Strings(removed_temps);
    w.EndObject();
    Result<std::string> text = w.Finish();
    if (text.ok()) std::printf("%s\n", text->c_str());
  } else if (!quiet) {
    uint64_t before = 0, after = 0;
    const output::PartFiles& parts = outcome->parts;
    for (size_t k = 0; k < reports.size(); ++k) {
      if (finish) break;  // the parts wrote the shards; finish checked them
      const rewrite::ShrinkReport& r = reports[k];
      const bool complete = std::find(parts.skipped.begin(), parts.skipped.end(), r.output) != parts.skipped.end();
      if (k >= printed) PrintReport(text_out, r, options.dry_run, complete);
      before += r.input_file_bytes;
      after += r.output_file_bytes;
    }
    if (request.part.kind == output::PartSpec::Kind::kAll && reports.size() > 1)
      std::fprintf(text_out, "total: %s -> %s\n", HumanBytes(before).c_str(), HumanBytes(after).c_str());
    if (options.verify) {
      size_t tensors = 0;
      uint64_t bytes = 0;
      for (const rewrite::ShrinkReport& r : reports) {
        tensors += r.verified_tensors;
        bytes += r.verified_bytes;
      }
      std::fprintf(text_out, "verified %zu tensors, %llu bytes\n", tensors, static_cast<unsigned long long>(bytes));
    }
    if (std::string line = PartSummary(request.part, parts, !outcome->index.empty()); !line.empty())
      std::fprintf(text_out, "%s\n", line.c_str());
  }
  return kExitOk;
}

}  // namespace

int RunShrink(const std::vector<std::string>& args) { return RunRewrite("shrink", false, args); }
int RunConvert(const std::vector<std::string>& args) { return RunRewrite("convert", true, args); }

}  // namespace zerofold::cli
