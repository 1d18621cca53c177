// zerofold inspect PATH... [--json]
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
#include "hfexport/base.h"
#include "inspect/inspect.h"
#include "inspect/json.h"
#include "merge/merge.h"
#include "model/listing_json.h"
#include "pickle/safety.h"

namespace zerofold::cli {

namespace {

constexpr const char* kInspectHelp =
    "usage: zerofold inspect [--json] PATH...\n"
    "\n"
    "Lists what checkpoint files hold, reading only their directories and\n"
    "pickles (or safetensors headers), never the tensor bytes: one line per\n"
    "tensor (name, dtype, shape, stride, storage, offset, bytes), then per file\n"
    "the bytes stored in storages, the bytes their views reference, the bloat\n"
    "ratio, tied tensors, unsafe globals (globals on no allowlist: torch.load\n"
    "would import and call them; each with its reason; zerofold never runs\n"
    "them), and how many\n"
    "zip records are deflated (compressed; zerofold inflates them as it reads\n"
    "and writes its outputs stored, as torch does).\n"
    "\n"
    "PATH is a torch file (zip or legacy format), a safetensors file, a\n"
    "Hugging Face model folder (pytorch_model.bin.index.json,\n"
    "model.safetensors.index.json, pytorch_model.bin, model.safetensors: each\n"
    "file, then the folder's total and what shrink would save, from shrink's\n"
    "own plan; --json: \"folders\"), or a\n"
    "PyTorch Distributed Checkpoint folder (.metadata and *.distcp, the\n"
    "safetensors form, or a training output folder holding\n"
    "pytorch_model_fsdp_0/): every key with dtype, global shape, chunk count\n"
    "and files, the non-tensor keys, and tensor bytes per group (model\n"
    "weights; optimizer, optim, lr_scheduler, dataloader, train_state, and\n"
    "any group holding only optimizer state, as merge leaves them out).\n"
    "A Megatron-Core / NeMo 2 torch_dist checkpoint (the folder, a Megatron-LM\n"
    "save folder with latest_checkpointed_iteration.txt, or a NeMo 2 folder\n"
    "with weights/) adds which Megatron-Core wrote it, the iteration, the\n"
    "training arguments that shape the model (common.pt, read as data), the\n"
    "stacked and N-D flattened keys, the optimizer's form, and what `zerofold\n"
    "merge` would write (weights, --unstack, --select optimizer) or why not.\n"
    "Or a DeepSpeed checkpoint folder (`latest` or `latest_universal` and tag\n"
    "folders, or a tag folder): described as a whole (stage, world size,\n"
    "optimizer, dtypes, counts, bytes of fp32 masters, optimizer state and\n"
    "module copy, files) with what `zerofold merge` would write or why it\n"
    "would refuse.\n"
    "\n"
    "With --hf BASE, each Megatron-Core or DCP PATH adds what `zerofold merge\n"
    "PATH OUT --hf BASE` would do: the family table it chooses, the tensors and\n"
    "bytes it would write, the trainer tensors its rules drop, or why it would\n"
    "refuse (names missing from the export or extra to BASE, shapes, unmapped\n"
    "tensors, no table: exit 1). Text only.\n"
    "\n"
    "The byte ranges a job would read (to fetch them ahead): that job with\n"
    "--dry-run --json (\"reads\", \"read_bytes\").\n"
    "\n"
    "flags:\n";

const std::vector<FlagSpec> kInspectFlags = WithLimitFlags({
    {"json", false, "print one JSON document (schema in README.md)"},
    {"hf", true, "Megatron, DCP: what merge --hf BASE would write (table, tensors, bytes) or why it refuses", "BASE"},
    {"max-header-bytes", true, "safetensors header limit (default 100000000, the format's own)", "SIZE"},
    {"help", false, "show this help"},
});

std::string Dims(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// Names come from the file: control bytes and invalid UTF-8 are shown
// escaped, as error lines show them, so a hostile name cannot drive the
// terminal.
std::string Shown(std::string_view text) { return EscapeForDisplay(text, Backslash::kEscape); }

void PrintHuman(const model::Listing& l) {
  std::printf("%s (%s)\n", Shown(l.path).c_str(), std::string(model::FileFormatName(l.format)).c_str());
  std::vector<std::string> names;
  size_t w = 4;
  for (const model::TensorInfo& t : l.tensors) {
    names.push_back(Shown(t.name));
    w = std::max(w, names.back().size());
  }
  if (w > 60) w = 60;
  std::printf("  %-*s %-9s %-16s %-16s %-8s %10s %12s\n", static_cast<int>(w), "name", "dtype", "shape", "stride",
              "storage", "offset", "bytes");
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const model::TensorInfo& t = l.tensors[i];
    std::printf("  %-*s %-9s %-16s %-16s %-8s %10lld %12llu%s\n", static_cast<int>(w), names[i].c_str(),
                t.dtype.c_str(), Dims(t.shape).c_str(), Dims(t.stride).c_str(), Shown(t.storage).c_str(),
                static_cast<long long>(t.offset), static_cast<unsigned long long>(t.nbytes),
                t.quantized ? "  (quantized)" : "");
  }
  double ratio = l.referenced_bytes ? static_cast<double>(l.stored_bytes) / static_cast<double>(l.referenced_bytes) : 1.0;
  std::printf("  %zu tensors in %zu storages: stored %s, referenced %s: %.2fx\n", l.tensors.size(), l.storages.size(),
              HumanBytes(l.stored_bytes).c_str(), HumanBytes(l.referenced_bytes).c_str(), ratio);
  if (l.big_endian) std::printf("  byteorder big: values are read byte-swapped, as torch 2.x loads them\n");
  for (const std::vector<std::string>& group : l.tied) {
    std::string line;
    for (size_t i = 0; i < group.size(); ++i) line += (i ? " = " : "") + Shown(group[i]);
    std::printf("  tied: %s\n", line.c_str());
  }
  if (!l.unsafe_globals.empty()) {
    std::printf("  unsafe globals (never run by zerofold; torch.load would run them): %s\n",
                Shown(pickle::DescribeUnsafe(l.unsafe_globals)).c_str());
  }
  if (l.deflated_records > 0)
    std::printf("  deflated: %llu of %llu zip records are compressed (inflated when read; outputs are written stored)\n",
                static_cast<unsigned long long>(l.deflated_records), static_cast<unsigned long long>(l.zip_records));
  if (l.crc_unrecorded_records > 0)
    std::printf("  crc32: not recorded (0) for %llu of %llu zip records, as torch.serialization."
                "set_crc32_options(False) writes them; those records are not checked\n",
                static_cast<unsigned long long>(l.crc_unrecorded_records),
                static_cast<unsigned long long>(l.zip_records));
}

void PrintDcp(const dcp::Listing& l) {
  std::printf("%s (PyTorch Distributed Checkpoint, %s layout%s%s, %zu data files)\n", Shown(l.path).c_str(),
              l.safetensors_form ? "safetensors" : l.schema_2x ? "torch 2.x" : "torch 1.13",
              l.version.empty() ? "" : ", version ", Shown(l.version).c_str(), l.files.size());
  size_t w = 4;
  for (const dcp::KeyListing& k : l.tensors) w = std::max(w, Shown(k.key).size());
  if (w > 60) w = 60;
  std::printf("  %-*s %-9s %-16s %6s %12s  %s\n", static_cast<int>(w), "key", "dtype", "shape", "chunks", "bytes",
              "files");
  for (const dcp::KeyListing& k : l.tensors) {
    std::string files;
    for (size_t i = 0; i < k.files.size(); ++i) {
      if (i) files.push_back(' ');
      files.append(Shown(k.files[i]));
    }
    std::printf("  %-*s %-9s %-16s %6zu %12llu  %s\n", static_cast<int>(w), Shown(k.key).c_str(), k.dtype.c_str(),
                Dims(k.shape).c_str(), k.chunks, static_cast<unsigned long long>(k.nbytes), files.c_str());
  }
  for (const std::string& k : l.non_tensor) std::printf("  %s  (not a tensor)\n", Shown(k).c_str());
  std::string totals;
  for (const dcp::GroupTotal& g : l.groups) {
    if (g.tensors == 0 && g.group != "model") continue;
    if (!totals.empty()) totals.append("; ");
    totals.append(g.group).append(" ").append(std::to_string(g.tensors)).append(" tensors ").append(HumanBytes(g.nbytes));
  }
  std::printf("  %zu tensor keys, %zu non-tensor keys: %s\n", l.tensors.size(), l.non_tensor.size(), totals.c_str());
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out.empty() ? "-" : out;
}

std::string OutlookText(const megatron::MergeOutlook& o) {
  if (o.mergeable) return std::to_string(o.tensors) + " tensors, " + HumanBytes(o.bytes);
  return "refuses: " + Shown(o.refusal.ToString());
}

void PrintRanks(const ranks::Inspection& i) {
  std::printf("%s (per-rank DTensor files, world %lld%s%s)\n", Shown(i.folder.path).c_str(),
              static_cast<long long>(i.folder.world), i.folder.strategy.empty() ? "" : ", ",
              Shown(i.folder.strategy).c_str());
  for (const std::string& m : i.summary.meshes) std::printf("  mesh     %s\n", Shown(m).c_str());
  std::printf("  files    %zu model, %zu optim%s\n", i.folder.model_files.size(), i.folder.optim_files.size(),
              i.folder.hf_folder.empty() ? "" : ", huggingface/");
  for (const ranks::TensorRow& t : i.tensors)
    std::printf("  %s  %s %s  %s  %zu piece%s\n", Shown(t.name).c_str(), std::string(torch::Info(t.dtype).name).c_str(),
                torch::ShapeText(t.shape).c_str(), t.placements.empty() ? "plain" : t.placements.c_str(), t.pieces,
                t.pieces == 1 ? "" : "s");
  if (i.outlook.ok())
    std::printf("  merge    %zu tensors (%zu DTensors, %zu plain); copies held by several ranks are hashed by merge\n",
                i.tensors.size(), i.summary.dtensors, i.summary.plain);
  else
    std::printf("  merge    refused: %s\n", Shown(i.outlook.ToString()).c_str());
}

void PrintMegatron(const megatron::Inspection& i) {
  std::string where = megatron::LayoutName(i.folder.layout);
  if (!i.folder.iteration_folder.empty())
    where += ", " + Shown(i.folder.iteration_folder) + " (tracker: " + Shown(i.folder.tracker) + ")";
  std::printf("%s (Megatron-Core torch_dist checkpoint, %s)\n", Shown(i.folder.checkpoint).c_str(), where.c_str());
  std::printf("  torch_dist folder  %s\n", Shown(i.folder.torch_dist).c_str());
  std::printf("  written by         Megatron-Core %s (.metadata root %s%s, %zu local plans%s%s)\n",
              i.core_version.empty() ? "?" : i.core_version.c_str(), i.metadata_root.c_str(),
              i.has_mcore_data ? ", mcore_data" : "", i.local_plans, i.local_plan_class.empty() ? "" : " of ",
              i.local_plan_class.c_str());
  const megatron::CommonState& c = i.common;
  std::printf("  iteration          %s\n", c.iteration ? std::to_string(*c.iteration).c_str() : "not recorded");
  if (c.checkpoint_version) std::printf("  checkpoint version %g\n", *c.checkpoint_version);
  for (const auto& [name, value] : c.args) {
    json::Writer w = model::NewJsonWriter();
    w.Write(value);
    Result<std::string> text = w.Finish();
    std::printf("  %-36s %s\n", name.c_str(), text.ok() ? Shown(*text).c_str() : "?");
  }
  for (const auto& [name, value] : c.content_metadata) {
    json::Writer w = model::NewJsonWriter();
    w.Write(value);
    Result<std::string> text = w.Finish();
    std::printf("  content_metadata.%-19s %s\n", Shown(name).c_str(), text.ok() ? Shown(*text).c_str() : "?");
  }
  if (!c.unsafe_globals.empty())
    std::printf("  common.pt names globals torch.load would run (never run here): %s\n",
                Shown(pickle::DescribeUnsafe(c.unsafe_globals)).c_str());
  std::printf("  optimizer          %s, %zu tensors, %s\n", megatron::OptimizerFormName(i.optimizer),
              i.optimizer_tensors, HumanBytes(i.optimizer_bytes).c_str());
  for (const megatron::StackedKey& s : i.stacked) {
    std::string text = s.layers ? std::to_string(s.layers) + " layers" : "";
    if (s.experts) text += (text.empty() ? "" : " x ") + std::to_string(s.experts) + " experts";
    std::printf("  stacked  %s  %s\n", Shown(s.key).c_str(), text.c_str());
  }
  for (const megatron::NdKey& n : i.nd)
    std::printf("  N-D flattened  %s  %s -> %s\n", Shown(n.key).c_str(), Dims(n.stored).c_str(), Dims(n.original).c_str());
  std::printf("  merge: weights %s; --unstack %s", OutlookText(i.weights).c_str(), OutlookText(i.unstacked).c_str());
  if (i.optimizer != megatron::OptimizerForm::kNone)
    std::printf("; --select optimizer %s", OutlookText(i.optimizer_merge).c_str());
  std::printf("\n");
  PrintDcp(i.listing);
}

void PrintZero(const zero::ZeroInspection& z) {
  std::printf("%s (DeepSpeed %s checkpoint, tag %s)\n", Shown(z.checkpoint).c_str(), z.layout.c_str(),
              Shown(z.tag).c_str());
  std::printf("  deepspeed version  %s\n", z.ds_version.empty() ? "not recorded" : Shown(z.ds_version).c_str());
  std::printf("  zero stage         %d\n", z.stage);
  std::printf("  world size         %u\n", z.world_size);
  std::printf("  optimizer          %s\n", Shown(z.optimizer).c_str());
  std::printf("  master dtype       %s\n", Joined(z.master_dtypes).c_str());
  std::printf("  module dtype       %s\n", Joined(z.module_dtypes).c_str());
  std::printf("  params %zu, frozen params %zu, buffers %zu, ties %zu\n", z.params, z.frozen_params, z.buffers, z.ties);
  std::printf("  fp32 masters %s, optimizer state %s, module copy %s\n", HumanBytes(z.master_bytes).c_str(),
              HumanBytes(z.optimizer_state_bytes).c_str(), HumanBytes(z.module_bytes).c_str());
  for (const zero::ZeroFileInfo& f : z.files) {
    std::printf("  %12llu  %-14s %s\n", static_cast<unsigned long long>(f.bytes), f.role.c_str(), Shown(f.path).c_str());
  }
  if (!z.linked_by_value.empty()) {
    std::printf("  merge: links %zu fp32 masters to params by shape and saved value (the first: %s); --json lists them\n",
                z.linked_by_value.size(), Shown(z.linked_by_value.front()).c_str());
  } else if (z.mergeable) {
    std::printf("  merge: writes %zu tensors, %s as float32 (torch file, ties shared)\n", z.merge_tensors,
                HumanBytes(z.merge_bytes).c_str());
  } else {
    std::printf("  merge: refuses: %s\n", Shown(z.refusal.ToString()).c_str());
  }
}

void PrintFolderTotal(const model::FolderTotal& t) {
  // What the folder holds besides its checkpoint files, named, then the
  // total (the last line).
  if (!t.unread.empty()) {
    std::string names;
    for (const std::string& u : t.unread) names += (names.empty() ? "" : ", ") + Shown(u);
    std::printf("\nnot read (not Hugging Face layout; `zerofold scan` judges every file): %s\n", names.c_str());
  }
  const double ratio =
      t.referenced_bytes ? static_cast<double>(t.stored_bytes) / static_cast<double>(t.referenced_bytes) : 1.0;
  std::printf("\nfolder %s: %zu files, %s on disk; stored %s, referenced %s: %.2fx",
              EscapeForDisplay(t.path, Backslash::kEscape).c_str(), t.files, HumanBytes(t.file_bytes).c_str(),
              HumanBytes(t.stored_bytes).c_str(), HumanBytes(t.referenced_bytes).c_str(), ratio);
  if (t.shrunk_file_bytes) {
    const uint64_t saved = t.file_bytes - std::min(t.file_bytes, *t.shrunk_file_bytes);
    std::printf("; shrink would save %s (%s -> %s)", HumanBytes(saved).c_str(), HumanBytes(t.file_bytes).c_str(),
                HumanBytes(*t.shrunk_file_bytes).c_str());
  }
  std::printf("\n");
}

// inspect --hf BASE of `path`: merge --hf's dry run (merge/merge.h), told
// as one line. Returns its status.
Status PrintHfOutlook(const std::string& path, const std::string& base, const model::ListOptions& options) {
  merge::MergeOptions m;
  m.dry_run = true;
  m.hf_base = base;
  m.read = options.torch;
  Result<merge::MergeReport> r = merge::MergeCheckpoint(CommandEnv(), path, "hf-export", m);
  if (!r.ok()) {
    std::printf("merge --hf %s: refuses (%s)\n", base.c_str(), r.status().ToString().c_str());
    return r.status();
  }
  std::printf("merge --hf %s: table %s (%s, %s names): %zu tensors, %s in %zu file%s", base.c_str(),
              r->hf_table.c_str(), r->hf_family.c_str(), r->hf_source.c_str(), r->layout.entries.size(),
              HumanBytes(r->tensor_bytes).c_str(), r->files.size(), r->files.size() == 1 ? "" : "s");
  if (!r->hf_dropped.empty()) std::printf("; dropped by rule: %s", hfexport::FewNames(r->hf_dropped).c_str());
  std::printf("\n");
  return Status::OK();
}

}  // namespace

// What convert --dequantize would write.
void PrintQuantized(const inspect::Quantized& q) {
  if (!q.refusal.ok()) {
    std::printf("\nquantized: convert --dequantize would refuse: %s\n", q.refusal.ToString().c_str());
    return;
  }
  std::string schemes;
  for (const std::string& s : q.schemes) schemes += (schemes.empty() ? "" : ", ") + s;
  std::printf("\nquantized: %s%s; convert --dequantize writes %zu weights in bf16 or fp32, keeps %zu tensors\n",
              q.method.empty() ? "scheme by tensor names" : ("quant_method " + q.method).c_str(),
              schemes.empty() ? "" : (" (" + schemes + ")").c_str(), q.groups.size(), q.kept);
  for (const inspect::Quantized::Group& g : q.groups) {
    std::string shape, inputs;
    for (uint64_t d : g.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    for (const std::string& in : g.inputs) inputs += (inputs.empty() ? "" : " + ") + Shown(in);
    std::printf("  %s [%s] %s <- %s\n", Shown(g.name).c_str(), shape.c_str(), g.scheme.c_str(), inputs.c_str());
  }
}

int RunInspect(const std::vector<std::string>& argv) {
  Result<ParsedArgs> parsed = ParseArgs(argv, kInspectFlags);
  if (!parsed.ok()) return UsageError("inspect", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    std::fputs(kInspectHelp, stdout);
    std::fputs(FlagHelp(kInspectFlags).c_str(), stdout);
    return kExitOk;
  }
  if (args.positionals.empty()) return UsageError("inspect", "needs at least one PATH");
  model::ListOptions options;
  if (Status s = ApplyLimitFlags(args, &options.torch); !s.ok()) return UsageError("inspect", s.message());
  if (auto v = args.Value("max-header-bytes")) {
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok()) return UsageError("inspect", "--max-header-bytes needs a size");
    options.max_safetensors_header = *n;
  }
  const bool as_json = args.Has("json");
  const std::optional<std::string> hf_base = args.Value("hf");
  if (hf_base && as_json) return UsageError("inspect", "--hf prints text; drop --json");
  int worst = kExitOk;
  bool first = true;
  // Each PATH shown as its report comes: errors and warnings on stderr,
  // the text on stdout (JSON: the document at the end).
  auto fail = [&worst](const Status& s) {
    PrintError(s);
    worst = std::max(worst, ExitCodeFor(s));
  };
  auto show = [&](const auto& print, const auto& described) {
    if (as_json) return;
    if (!first) std::printf("\n");
    first = false;
    print(described);
  };
  const inspect::Report report =
      inspect::Inspect(CommandEnv(), args.positionals, options, [&](const inspect::PathReport& p) {
        if (!p.error.ok()) {
          fail(p.error);
          return;
        }
        if (p.megatron) show(PrintMegatron, *p.megatron);
        if (p.ranks) show(PrintRanks, *p.ranks);
        if (p.dcp) show(PrintDcp, *p.dcp);
        if ((p.megatron || p.dcp) && hf_base && !as_json) {
          Status hf = PrintHfOutlook(p.path, *hf_base, options);
          if (!hf.ok()) worst = std::max(worst, ExitCodeFor(hf));
        }
        if (p.deepspeed) {
          for (const auto& [file, message] : p.deepspeed->warnings) PrintWarning(file, message);
          show(PrintZero, *p.deepspeed);
        }
        for (const inspect::FileReport& f : p.files) {
          if (f.listing.ok()) show(PrintHuman, *f.listing);
          else fail(f.listing.status());
        }
        if (p.quantized && !as_json) PrintQuantized(*p.quantized);
        if (p.folder && !as_json) PrintFolderTotal(*p.folder);
      });
  if (as_json) {
    Result<std::string> text = inspect::ReportJson(report);
    if (!text.ok()) {
      PrintError(Status::Internal("--json document: " + text.status().message()));
      return kExitInternal;
    }
    std::fputs(text->c_str(), stdout);
  }
  return worst;
}

}  // namespace zerofold::cli
