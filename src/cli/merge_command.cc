// zerofold merge CKPT_DIR OUT
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/limit_flags.h"
#include "cli/part_flag.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/shrink_convert.h"
#include "cli/signals.h"
#include "hfexport/base.h"
#include "megatron/folder.h"
#include "megatron/merge.h"
#include "merge/merge.h"
#include "model/listing_json.h"
#include "rewrite/cast.h"
#include "zerofold/env.h"

namespace zerofold::cli {

namespace {

constexpr const char* kMergeHelp =
    "usage: zerofold merge [FLAGS] CKPT_DIR OUT\n"
    "\n"
    "Rebuilds full tensors from a PyTorch Distributed Checkpoint folder (FSDP,\n"
    "FSDP2, TorchTitan, torchtune, Accelerate: .metadata and *.distcp files,\n"
    "torch 1.13 or 2.x layout, stream.zstd/1 chunks; or torch 2.8's\n"
    "safetensors form) or a training output\n"
    "folder holding one (pytorch_model_fsdp_0/): every chunk of every key\n"
    "placed by its offsets, dtypes as saved. By default the model weights:\n"
    "top-level groups named optimizer, optim, lr_scheduler, dataloader or\n"
    "train_state, and any group holding only optimizer state (GROUP.state.<param>.\n"
    "exp_avg, exp_avg_sq, step, momentum_buffer, ...; GROUP.param_groups) are\n"
    "left out and counted, non-tensor values too; when every key left starts\n"
    "with `model.` (torch's {\"model\": ..., \"optim\": ...} recipe, Accelerate)\n"
    "that prefix is stripped. --select PREFIX merges the keys under PREFIX\n"
    "instead, named relative to it.\n"
    "\n"
    "A folder of per-rank DTensor state dicts as verl and SkyRL save them\n"
    "(model_world_size_W_rank_R.pt for every rank, fsdp_config.json,\n"
    "huggingface/): each rank's shard placed by its device mesh coordinates\n"
    "and placements (Shard, uneven and empty shards, Replicate, FSDP2 + TP's\n"
    "_StridedShard), copies held by several ranks (Replicate, buffers)\n"
    "checked equal by hash and written once, dtypes as saved, huggingface/'s\n"
    "config and tokenizer copied; --select optimizer merges the optim files\n"
    "(state.<param>.exp_avg, ...).\n"
    "\n"
    "A Megatron-Core / NeMo 2 torch_dist checkpoint (metadata.json naming the\n"
    "torch_dist backend beside .metadata, common.pt and *.distcp; or a\n"
    "Megatron-LM save folder with latest_checkpointed_iteration.txt and\n"
    "iter_NNNNNNN/, --tag picking another iteration; or a NeMo 2 checkpoint\n"
    "with weights/) merges the same way, with Megatron's names: by default\n"
    "every tensor key but optimizer.* (ShardedObjects, _extra_state and RNG\n"
    "state are bytes, left out); --select optimizer the optimizer state\n"
    "(N-D flattened keys back in their parameter's shape; the distributed\n"
    "optimizer's dp_reshardable buffers are refused); --unstack splits the\n"
    "stacked decoder.layers.X [L, ...] into decoder.layers.<i>.X and stacked\n"
    "...mlp.experts.experts.X [E, ...] into ...experts.<e>.X.\n"
    "\n"
    "--hf BASE turns a Megatron-Core or Distributed Checkpoint (TorchTitan, FSDP),\n"
    "per-rank DTensor files (verl, SkyRL) or a DeepSpeed checkpoint into the\n"
    "Hugging Face model training started from: BASE is that model's\n"
    "folder (config.json, tokenizer files, model.safetensors or shards and\n"
    "index). A family table chosen by BASE's model_type and the checkpoint's\n"
    "kind maps the trainer's tensors to BASE's names: Megatron's stacked\n"
    "layers and experts split, linear_qkv split per query group into q/k/v\n"
    "(weights and biases), linear_fc1 into gate/up, fused layernorms renamed,\n"
    "vocab padding trimmed to vocab_size, a tied output layer dropped,\n"
    "TorchTitan's wq/wk rows permuted to HF's RoPE layout: all as slices of the\n"
    "plan, no byte read twice. Built in: Megatron llama/mistral, qwen2, qwen3,\n"
    "qwen3_moe, mixtral, deepseek_v3; TorchTitan llama, qwen3, qwen3_moe,\n"
    "deepseek_v3; FSDP, rank-file and DeepSpeed names one to one (a tied head\n"
    "kept where BASE stores it) (tables/hf/README.md; --hf-table FILE\n"
    "adds or overrides one without recompiling). Before a byte is written every\n"
    "output name and\n"
    "shape is checked against BASE's index both ways: names missing, extra or\n"
    "of another shape are refused and listed, as are trainer tensors no rule\n"
    "maps (--drop-unmapped leaves those out and lists them). Each tensor is\n"
    "written in BASE's dtype (rounded as torch's .to()) unless --dtype; OUT (a\n"
    "folder) gets safetensors shards and an index, and BASE's config.json,\n"
    "generation_config.json and tokenizer files byte for byte.\n"
    "\n"
    "Or rebuilds the full model from a DeepSpeed ZeRO stage 0, 1, 2 or 3 or a\n"
    "universal checkpoint (ds_to_universal.py),\n"
    "as DeepSpeed's zero_to_fp32.py does, without Python or DeepSpeed: trainable\n"
    "params as their fp32 master weights, frozen params and buffers from the\n"
    "module (16-bit values upcast to float32 exactly, integer buffers kept as\n"
    "they are), tied params under every name. Only the byte ranges of the fp32\n"
    "partitions are read (never the Adam moments), each tensor streamed through\n"
    "a bounded buffer: memory stays small whatever the model's size.\n"
    "\n"
    "ZeRO-0 fp16 masters, which DeepSpeed saves unnamed, are linked to their\n"
    "params by layout, shape and saved value; several fits are refused.\n"
    "\n"
    "A DeepSpeed CKPT_DIR holds `latest` or `latest_universal` (naming the tag) and\n"
    "global_stepN/ folders, or is\n"
    "a tag folder itself. OUT is a file when its name says a format (.bin,\n"
    ".pt, .pth, .ckpt, .safetensors), else a folder receiving pytorch_model.bin\n"
    "(or shards and pytorch_model.bin.index.json past --max-shard-size; with\n"
    "--to safetensors model.safetensors or its shards and index) and the model\n"
    "files of CKPT_DIR (config.json, generation_config.json, tokenizer and\n"
    "processor files; not trainer_state.json, optimizer, scheduler or rng\n"
    "state): merge checkpoint-N/ of a Hugging Face Trainer gives a folder\n"
    "transformers loads. An unknown extension (model.st), '-' and X.zst are\n"
    "refused, as are --to contradicting the name and --max-shard-size with a\n"
    "file OUT. Existing output files (and an earlier save in a folder OUT) are\n"
    "refused without --force, before anything is read; too little free disk is\n"
    "refused up front (exit 3). Output files appear only when all of them are\n"
    "complete. Temp files that killed runs left in the output folder are\n"
    "removed, with a note on stderr.\n"
    "\n"
    "Past one machine, --part I/N (I = 0..N-1) writes only the files of part I\n"
    "of a folder OUT (whole files, balanced by bytes; every part plans the same)\n"
    "and no index; files already complete are skipped, so a rerun redoes only\n"
    "what is missing; a file of the part with another size is refused (--force\n"
    "rewrites the part's files). --part finish then checks every file and\n"
    "writes the index. Give every part and finish the same flags. An earlier\n"
    "save's other files in OUT are refused without --force, as one run refuses\n"
    "them; with it, finish removes them. Run the parts as a job array:\n"
    "examples/slurm/merge.sbatch.\n"
    "\n"
    "examples:\n"
    "  zerofold merge ckpt/ out/                      # out/pytorch_model.bin\n"
    "  zerofold merge --to safetensors ckpt/ out/     # out/model.safetensors\n"
    "  zerofold merge --dry-run ckpt/ model.bin       # names, shapes, sources\n"
    "  zerofold merge --only 'transformer.h.0.*' ckpt/ part.bin\n"
    "  zerofold merge --to safetensors fsdp_ckpt/ out/   # a DCP folder\n"
    "  zerofold merge --select optimizer.state fsdp_ckpt/ adam.safetensors\n"
    "  zerofold merge --unstack --to safetensors megatron_ckpt/ out/\n"
    "  zerofold merge megatron_ckpt/ hf_out/ --hf Qwen3-8B/   # a Hugging Face folder\n"
    "  zerofold merge --part 0/4 ckpt/ out/ && ... && zerofold merge --part finish ckpt/ out/\n"
    "\n"
    "flags:\n";

const std::vector<FlagSpec> kMergeFlags = WithProgressFlags(WithLimitFlags({
    {"tag", true, "the tag folder to merge (default: the one `latest` names); Megatron-LM: the iteration (10, release)", "TAG"},
    {"dtype", true, "dtype of every floating tensor: float32 (fp32, float), float16 (fp16, half), bfloat16 (bf16) (default: ZeRO float32, DCP as saved); rounded as torch's .to()", "DTYPE"},
    {"exclude-frozen", false, "leave frozen params (requires_grad=False) out"},
    {"select", true, "DCP, Megatron: merge the keys under PREFIX (e.g. optimizer.state), named relative to it; '' every key", "PREFIX"},
    {"unstack", false, "Megatron: split stacked layers and experts into Megatron's per-layer, per-expert names"},
    {"hf", true, "Megatron, DCP: write the Hugging Face model of folder BASE (names, shapes, dtypes, config and tokenizer files)", "BASE"},
    {"hf-table", true, "with --hf: family table file(s) tried before the built-in ones; comma-separated list", "FILE"},
    {"drop-unmapped", false, "with --hf: leave out (and list) trainer tensors no table rule maps instead of refusing"},
    {"only", true, "merge only names matching a glob (*, ?, [..]); comma-separated list; ties follow", "PATTERN"},
    {"max-shard-size", true, "split a folder OUT into shards of at most SIZE (default 5GB)", "SIZE"},
    {"to", true, "output format: torch (default) or safetensors", "FORMAT"},
    {"dry-run", false, "print the plan (names, shapes, source slices) and the files; write nothing"},
    {"verify", false, "read the output back and check every tensor against the partitions (xxh3-128)"},
    {"force", false, "replace existing output files (and an earlier save in a folder OUT)"},
    {"keep-unsafe", false, "DeepSpeed: merge rank files whose pickles name unsafe globals (never run, not carried) instead of refusing"},
    PartFlagSpec(),
    {"json", false, "print a JSON summary on stdout"},
    {"quiet", false, "print nothing but errors"},
    {"buffer-size", true, "bytes per read (default 4MiB)", "SIZE"},
    {"help", false, "show this help"},
}));

std::string Base(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string SourceText(const merge::MergeReport& r, const zero::SourceSlice& s) {
  // input_files: model files, then optim files, then universal param files.
  size_t index = s.source == zero::SourceKind::kOptimStates  ? r.model_files + s.file
                 : s.source == zero::SourceKind::kParamFile ? r.model_files + r.optim_files + s.file
                                                             : s.file;
  std::string file = index < r.input_files.size() ? Base(r.input_files[index]) : "?";
  std::string text = file + ":data/" + s.storage + "[" + std::to_string(s.offset) + ":" + std::to_string(s.offset + s.count) + "]";
  if (s.dtype != torch::DType::kFloat32) text.append(" ").append(torch::Info(s.dtype).name);
  return text;
}

std::string StageText(const merge::MergeReport& r) {
  std::string s = "ZeRO-" + std::to_string(r.plan.zero_stage);
  if (r.plan.bf16_optimizer) s += " (BF16_Optimizer)";
  return s + ", world size " + std::to_string(r.plan.world_size);
}

// A DCP piece: the chunk's box and where its bytes are.
std::string PieceText(const merge::MergeReport& r, const gather::Piece& p) {
  std::string file = p.file < r.gather.sources.size() ? Base(r.gather.sources[p.file].path) : "?";
  const uint64_t itemsize = torch::Info(p.dtype).itemsize;
  std::string text = file + " offsets " + torch::ShapeText(p.offsets) + " sizes " + torch::ShapeText(p.sizes);
  if (p.transform == gather::Transform::kZstd) {
    text += " zstd frame [" + std::to_string(p.frame_offset) + ", " + std::to_string(p.frame_offset + p.frame_length) +
            ")";
  } else {
    uint64_t begin = p.data_offset + static_cast<uint64_t>(p.view_offset) * itemsize;
    text += " bytes [" + std::to_string(begin) + ", " + std::to_string(begin + gather::NumelOf(p.sizes) * itemsize) + ")";
  }
  return text;
}

std::string LeftOutText(const merge::MergeReport& r) {
  std::string text;
  for (const auto& [group, n] : r.selection.left_out) {
    text += (text.empty() ? "" : ", ") + group + " " + std::to_string(n);
    auto why = r.selection.left_out_why.find(group);
    if (why != r.selection.left_out_why.end() && why->second == dcp::LeftOutWhy::kOptimizerState)
      text += " (optimizer state)";
  }
  return text;
}

std::string MegatronText(const merge::MergeReport& r) {
  std::string text = "Megatron-Core torch_dist, " + std::string(megatron::LayoutName(r.megatron.layout));
  if (!r.core_version.empty()) text += ", core " + r.core_version;
  if (!r.megatron.iteration_folder.empty()) text += ", " + r.megatron.iteration_folder;
  return text;
}

// "per-rank DTensor files, world 4, mesh (2, 2) dp, tp, 2 copies checked equal".
std::string RanksText(const merge::MergeReport& r) {
  std::string text = "per-rank DTensor files, world " + std::to_string(r.ranks.world);
  if (!r.ranks.strategy.empty()) text += ", " + r.ranks.strategy;
  for (const std::string& m : r.ranks.meshes) text += ", mesh " + m;
  if (r.ranks.optimizer) text += r.ranks.optimizer_names_mapped ? ", optimizer state" : ", optimizer state by param id";
  text += ", " + std::to_string(r.ranks.replicated_checked) + " replicated copies checked equal";
  return text;
}

std::string KindText(const merge::MergeReport& r) {
  if (r.kind == merge::CheckpointKind::kRanks) return RanksText(r);
  return r.kind == merge::CheckpointKind::kDcp ? "DCP" : MegatronText(r);
}

void PrintDcpPlan(const merge::MergeReport& r) {
  if (r.kind == merge::CheckpointKind::kRanks)
    std::printf("%s: %s, %zu files\n", r.checkpoint.c_str(), RanksText(r).c_str(), r.gather.sources.size());
  else if (r.kind == merge::CheckpointKind::kMegatron)
    std::printf("%s: %s, %zu files\n", r.dcp_folder.c_str(), MegatronText(r).c_str(), r.gather.sources.size());
  else
    std::printf("%s: PyTorch Distributed Checkpoint (%s layout%s%s), %zu files\n", r.dcp_folder.c_str(),
                r.dcp_schema_2x ? "torch 2.x" : "torch 1.13", r.dcp_version.empty() ? "" : ", version ",
                r.dcp_version.c_str(), r.gather.sources.size());
  for (const merge::MergeOutputFile& f : r.files) {
    std::printf("%s (%s, %zu tensors):\n", f.path.c_str(), HumanBytes(f.bytes).c_str(), f.entries.size());
    for (size_t i : f.entries) {
      const merge::OutputEntry& e = r.layout.entries[i];
      const gather::GatherTensor& t = r.gather.tensors[e.tensor];
      std::string placements;
      if (r.kind == merge::CheckpointKind::kRanks && e.tensor < r.ranks.placements.size())
        placements = r.ranks.placements[e.tensor].empty() ? "  plain" : "  " + r.ranks.placements[e.tensor];
      std::printf("  %s  %s %s%s  %zu chunk%s\n", e.name.c_str(), std::string(torch::Info(t.dtype).name).c_str(),
                  torch::ShapeText(t.shape).c_str(), placements.c_str(), t.pieces.size(), t.pieces.size() == 1 ? "" : "s");
      for (const gather::Piece& p : t.pieces) std::printf("    <- %s\n", PieceText(r, p).c_str());
    }
  }
  if (!r.index.empty()) std::printf("%s\n", r.index.c_str());
}

void PrintPlan(const merge::MergeReport& r) {
  if (r.kind != merge::CheckpointKind::kZero) return PrintDcpPlan(r);
  std::printf("%s: %s, DeepSpeed %s\n", r.tag_folder.c_str(), StageText(r).c_str(),
              r.ds_version.empty() ? "?" : r.ds_version.c_str());
  for (const merge::MergeOutputFile& f : r.files) {
    std::printf("%s (%s, %zu tensors):\n", f.path.c_str(), HumanBytes(f.bytes).c_str(), f.entries.size());
    for (size_t i : f.entries) {
      const merge::OutputEntry& e = r.layout.entries[i];
      const zero::OutputTensor& t = r.plan.tensors[e.tensor];
      if (e.tie) {
        std::printf("  %s  tied to %s\n", e.name.c_str(), r.layout.entries[e.owner].name.c_str());
        continue;
      }
      std::string sources;
      for (size_t k = 0; k < t.slices.size(); ++k) sources += (k ? ", " : "") + SourceText(r, t.slices[k]);
      std::printf("  %s  %s %s %s  <- %s\n", e.name.c_str(), std::string(zero::TensorKindName(t.kind)).c_str(),
                  std::string(torch::Info(t.dtype).name).c_str(), torch::ShapeText(t.shape).c_str(),
                  sources.empty() ? "(empty)" : sources.c_str());
    }
  }
  if (!r.index.empty()) std::printf("%s\n", r.index.c_str());
}

void PrintSummary(const merge::MergeReport& r, const std::string& out, bool dry_run) {
  if (r.kind != merge::CheckpointKind::kZero) {
    std::string left = LeftOutText(r);
    std::string kind = KindText(r);
    if (r.nd_restored) kind += ", " + std::to_string(r.nd_restored) + " N-D flattened reshaped";
    if (r.unstacked_keys) kind += ", " + std::to_string(r.unstacked_keys) + " stacked keys split";
    if (!r.hf_table.empty()) {
      std::printf("--hf: %s table %s (%s names)", r.hf_family.c_str(), r.hf_table.c_str(), r.hf_source.c_str());
      if (!r.hf_dropped.empty()) std::printf("; dropped by rule: %s", hfexport::FewNames(r.hf_dropped).c_str());
      if (!r.hf_unmapped.empty())
        std::printf("; left out unmapped (%zu): %s", r.hf_unmapped.size(), hfexport::FewNames(r.hf_unmapped, 1000).c_str());
      std::printf("\n");
    }
    std::printf("%s (%s, %zu files) -> %s: %zu tensors%s; left out: %s%s%zu non-tensor; %s in %zu file%s%s\n",
                r.checkpoint.c_str(), kind.c_str(), r.gather.sources.size(), out.c_str(), r.layout.entries.size(),
                r.selection.stripped_model_prefix ? " ('model.' stripped)" : "", left.c_str(), left.empty() ? "" : ", ",
                r.selection.non_tensor, HumanBytes(r.tensor_bytes).c_str(), r.files.size(),
                r.files.size() == 1 ? "" : "s", dry_run ? " [dry run]" : "");
    if (r.verified)
      std::printf("verified %zu tensors, %llu bytes\n", r.verified_tensors,
                  static_cast<unsigned long long>(r.verified_bytes));
    return;
  }
  std::printf("%s (%s) -> %s: %zu params, %zu frozen, %zu buffers, %zu tied; %s in %zu file%s%s\n",
              r.checkpoint.c_str(), StageText(r).c_str(), out.c_str(), r.params, r.frozen_params, r.buffers, r.ties,
              HumanBytes(r.tensor_bytes).c_str(), r.files.size(), r.files.size() == 1 ? "" : "s",
              dry_run ? " [dry run]" : "");
  if (r.verified)
    std::printf("verified %zu tensors, %llu bytes\n", r.verified_tensors,
                static_cast<unsigned long long>(r.verified_bytes));
}

void WriteJson(json::Writer& w, const merge::MergeReport& r, bool dry_run, const output::PartSpec& part,
               const std::vector<std::string>& removed_temps, const io::ReadPlan* reads) {
  const bool dcp = r.kind != merge::CheckpointKind::kZero;
  const bool megatron = r.kind == merge::CheckpointKind::kMegatron;
  w.BeginObject();
  w.Key("checkpoint");
  w.String(r.checkpoint);
  w.Key("kind");
  const bool ranks = r.kind == merge::CheckpointKind::kRanks;
  w.String(ranks ? "ranks" : megatron ? "megatron" : dcp ? "dcp" : "zero");
  if (!r.hf_table.empty()) {
    w.Key("hf");
    w.BeginObject();
    w.Key("table");
    w.String(r.hf_table);
    w.Key("family");
    w.String(r.hf_family);
    w.Key("source");
    w.String(r.hf_source);
    for (const auto& [key, names] : {std::pair{"dropped", &r.hf_dropped}, std::pair{"unmapped_left_out", &r.hf_unmapped}}) {
      w.Key(key);
      w.Strings(*names);
    }
    w.EndObject();
  }
  if (ranks) {
    w.Key("ranks");
    w.BeginObject();
    w.Key("world_size");
    w.Int(r.ranks.world);
    w.Key("strategy");
    w.String(r.ranks.strategy);
    w.Key("meshes");
    w.Strings(r.ranks.meshes);
    w.Key("dtensors");
    w.Uint(r.ranks.dtensors);
    w.Key("plain");
    w.Uint(r.ranks.plain);
    w.Key("replicated_checked");
    w.Uint(r.ranks.replicated_checked);
    w.Key("optimizer");
    w.Bool(r.ranks.optimizer);
    w.EndObject();
  }
  if (megatron) {
    w.Key("megatron");
    w.BeginObject();
    w.Key("layout");
    w.String(megatron::LayoutName(r.megatron.layout));
    w.Key("torch_dist_folder");
    w.String(r.megatron.torch_dist);
    w.Key("iteration_folder");
    w.String(r.megatron.iteration_folder);
    w.Key("core_version");
    w.String(r.core_version);
    w.Key("optimizer_form");
    w.String(megatron::OptimizerFormName(r.optimizer));
    w.Key("nd_restored");
    w.Uint(r.nd_restored);
    w.Key("unstacked_keys");
    w.Uint(r.unstacked_keys);
    w.EndObject();
  }
  if (dcp) {
    w.Key("dcp_folder");
    w.String(r.dcp_folder);
    w.Key("dcp_schema");
    w.String(r.dcp_schema_2x ? "2.x" : "1.13");
    w.Key("model_prefix_stripped");
    w.Bool(r.selection.stripped_model_prefix);
    w.Key("left_out");
    w.BeginObject();
    for (const auto& [group, n] : r.selection.left_out) {
      w.Key(group);
      w.Uint(n);
    }
    w.EndObject();
    w.Key("left_out_why");
    w.BeginObject();
    for (const auto& [group, why] : r.selection.left_out_why) {
      w.Key(group);
      w.String(std::string(dcp::LeftOutWhyName(why)));
    }
    w.EndObject();
    w.Key("non_tensor");
    w.Uint(r.selection.non_tensor);
  }
  w.Key("tag_folder");
  w.String(r.tag_folder);
  w.Key("tag");
  w.String(r.tag);
  w.Key("ds_version");
  w.String(r.ds_version);
  w.Key("zero_stage");
  w.Int(r.plan.zero_stage);
  w.Key("world_size");
  w.Uint(r.plan.world_size);
  w.Key("bf16_optimizer");
  w.Bool(r.plan.bf16_optimizer);
  w.Key("format");
  w.String(merge::MergeFormatName(r.format));
  w.Key("dry_run");
  w.Bool(dry_run);
  if (reads != nullptr) WriteReadsJson(w, *reads);
  w.Key("inputs");
  w.Strings(r.input_files);
  w.Key("outputs");
  w.BeginArray();
  for (const merge::MergeOutputFile& f : r.files) {
    w.BeginObject();
    w.Key("path");
    w.String(f.path);
    w.Key("bytes");
    w.Uint(f.bytes);
    w.Key("tensors");
    w.Uint(f.entries.size());
    w.EndObject();
  }
  w.EndArray();
  w.Key("index");
  if (r.index.empty()) w.Null();
  else w.String(r.index);
  w.Key("removed");
  w.Strings(r.removed);
  WritePartsJson(w, part, r.parts);
  w.Key("tensor_bytes");
  w.Uint(r.tensor_bytes);
  w.Key("bytes_read");
  w.Uint(r.bytes_read);
  w.Key("params");
  w.Uint(r.params);
  w.Key("frozen_params");
  w.Uint(r.frozen_params);
  w.Key("buffers");
  w.Uint(r.buffers);
  w.Key("ties");
  w.Uint(r.ties);
  w.Key("verified");
  if (r.verified) {
    w.BeginObject();
    w.Key("tensors");
    w.Uint(r.verified_tensors);
    w.Key("bytes");
    w.Uint(r.verified_bytes);
    w.EndObject();
  } else {
    w.Bool(false);
  }
  w.Key("warnings");
  w.BeginArray();
  for (const auto& [path, message] : r.warnings) {
    w.BeginObject();
    w.Key("path");
    w.String(path);
    w.Key("message");
    w.String(message);
    w.EndObject();
  }
  w.EndArray();
  w.Key("tensors");
  w.BeginArray();
  for (size_t k = 0; k < r.files.size(); ++k) {
    for (size_t i : r.files[k].entries) {
      const merge::OutputEntry& e = r.layout.entries[i];
      const gather::GatherTensor& t = r.gather.tensors[e.tensor];
      w.BeginObject();
      w.Key("name");
      w.String(e.name);
      w.Key("kind");
      w.String(e.tie ? "tie" : dcp ? "tensor" : zero::TensorKindName(r.plan.tensors[e.tensor].kind));
      w.Key("dtype");
      w.String(torch::Info(t.dtype).name);
      w.Key("shape");
      w.BeginArray();
      for (int64_t d : t.shape) w.Int(d);
      w.EndArray();
      w.Key("file");
      w.String(Base(r.files[k].path));
      if (e.tie) {
        w.Key("tied_to");
        w.String(r.layout.entries[e.owner].name);
      } else {
        w.Key("sources");
        w.BeginArray();
        if (dcp) {
          for (const gather::Piece& p : t.pieces) w.String(PieceText(r, p));
        } else {
          for (const zero::SourceSlice& s : r.plan.tensors[e.tensor].slices) w.String(SourceText(r, s));
        }
        w.EndArray();
      }
      w.EndObject();
    }
  }
  w.EndArray();
  w.Key("removed_temp_files");
  w.Strings(removed_temps);
  w.EndObject();
}

}  // namespace

int RunMerge(const std::vector<std::string>& argv) {
  Result<ParsedArgs> parsed = ParseArgs(argv, kMergeFlags);
  if (!parsed.ok()) return UsageError("merge", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    std::fputs(kMergeHelp, stdout);
    std::fputs(FlagHelp(kMergeFlags).c_str(), stdout);
    return kExitOk;
  }
  if (args.positionals.size() != 2) return UsageError("merge", "needs CKPT_DIR and OUT");
  const std::string ckpt = args.positionals[0];
  const std::string out = args.positionals[1];

  merge::MergeOptions options;
  if (Status s = ApplyLimitFlags(args, &options.read); !s.ok()) return UsageError("merge", s.message());
  options.tag = args.Value("tag");
  if (auto v = args.Value("dtype")) {
    std::optional<torch::DType> d = rewrite::ParseCastTarget(*v);
    if (!d) return UsageError("merge", "--dtype takes " + std::string(rewrite::kCastTargetNames) + ", not '" + *v + "'");
    options.dtype = *d;
  }
  options.exclude_frozen = args.Has("exclude-frozen");
  options.select = args.Value("select");
  options.unstack = args.Has("unstack");
  options.keep_unsafe = args.Has("keep-unsafe");
  options.hf_base = args.Value("hf");
  if (auto v = args.Value("hf-table")) {
    for (size_t at = 0; at <= v->size();) {
      size_t comma = std::min(v->find(',', at), v->size());
      if (comma > at) options.hf_tables.push_back(v->substr(at, comma - at));
      at = comma + 1;
    }
  }
  options.drop_unmapped = args.Has("drop-unmapped");
  if (!options.hf_base && (args.Has("hf-table") || options.drop_unmapped))
    return UsageError("merge", "--hf-table and --drop-unmapped go with --hf BASE");
  if (Status s = ApplyOnly(args, &options.only); !s.ok()) return UsageError("merge", s.message());
  if (auto v = args.Value("max-shard-size")) {
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok() || *n == 0) return UsageError("merge", "--max-shard-size takes a size like 5GB, 500MB or 2GiB");
    options.max_shard_bytes = *n;
  }
  if (auto v = args.Value("to")) {
    if (*v == "torch") options.format = merge::MergeFormat::kTorch;
    else if (*v == "safetensors") options.format = merge::MergeFormat::kSafetensors;
    else return UsageError("merge", "--to takes torch or safetensors, not '" + *v + "'");
  }
  if (Status s = ApplyBufferSize(args, &options.buffer_bytes); !s.ok()) return UsageError("merge", s.message());
  options.dry_run = args.Has("dry-run");
  options.verify = args.Has("verify");
  options.force = args.Has("force");
  if (Result<output::PartSpec> part = ApplyPartFlag(args); part.ok()) options.part = *part;
  else return UsageError("merge", part.status().message());
  if (options.dry_run && options.verify) return UsageError("merge", "--verify checks written files; drop --dry-run");
  const bool quiet = args.Has("quiet");
  const bool as_json = args.Has("json");
  Result<Progress> chosen = ProgressFromFlags(args, quiet, options.dry_run);
  if (!chosen.ok()) return UsageError("merge", chosen.status().message());
  Progress& progress = *chosen;
  options.progress = [&](const char* phase, uint64_t done, uint64_t total) { progress.Update(std::string(phase) + " " + ckpt + " -> " + out, done, total); };

  // A dry run's --json lists the reads the merge would make.
  io::ReadPlan reads;
  if (as_json && options.dry_run) options.read_plan = &reads;
  Result<merge::MergeReport> r = merge::MergeCheckpoint(CommandEnv(), ckpt, out, options);
  RunEnded(r.ok());
  progress.Clear();
  const std::vector<std::string> removed_temps = NoteRemovedTempFiles(CommandEnv());
  if (!r.ok()) {
    return CommandFailed(r.status(), as_json);
  }
  if (!quiet)
    for (const auto& [path, message] : r->warnings) PrintWarning(path, message);
  if (as_json) {
    json::Writer w = model::NewJsonWriter();
    WriteJson(w, *r, options.dry_run, options.part, removed_temps, options.read_plan);
    Result<std::string> text = w.Finish();
    if (!text.ok()) {
      PrintError(text.status());
      return ExitCodeFor(text.status());
    }
    std::printf("%s\n", text->c_str());
  } else if (!quiet) {
    if (options.dry_run) PrintPlan(*r);
    PrintSummary(*r, out, options.dry_run);
    std::string part = PartSummary(options.part, r->parts, !r->index.empty());
    if (!part.empty()) std::printf("%s\n", part.c_str());
  }
  return kExitOk;
}

}  // namespace zerofold::cli
