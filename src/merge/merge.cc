#include "merge/merge.h"

#include <utility>

#include "dcp/folder.h"
#include "dcp/merge.h"
#include "hfexport/tied.h"
#include "megatron/common.h"
#include "megatron/folder.h"
#include "megatron/merge.h"
#include "model/hf_folder.h"
#include "output/folder.h"
#include "pickle/safety.h"
#include "ranks/folder.h"
#include "ranks/merge.h"
#include "zero/merge.h"

namespace zerofold::merge {

namespace {

// Writes report->gather in report->layout's order. The plan's sources are
// owned by the planned merge, which the caller drops after: their pointers
// are cleared so the report keeps only their paths.
Status WritePlanned(Env* env, const std::string& out, const OutputTarget& target, const MergeOptions& options,
                    MergeReport* report) {
  Status written = WriteMerge(env, report->gather, report->layout, out, target, report->input_files, options,
                                      report);
  for (gather::SourceFile& f : report->gather.sources) f.source = nullptr;
  return written;
}

// --hf: the trainer plan of `report` mapped to BASE's names (hfexport),
// laid out in BASE's order with --only; OUT gets BASE's model files.
Status MapToHf(Env* env, hfexport::SourceKind kind, const MergeOptions& options, OutputTarget* target,
               MergeReport* report) {
  hfexport::HfOptions hf;
  hf.base = *options.hf_base;
  hf.tables = options.hf_tables;
  hf.drop_unmapped = options.drop_unmapped;
  hf.dtype = options.dtype;
  hf.list.torch = options.read;
  ZF_ASSIGN_OR_RETURN(hfexport::HfExport e, hfexport::ExportHf(env, std::move(report->gather), kind, hf));
  report->gather = std::move(e.plan);
  // A dry run reads no tensor byte: tied pairs are checked when writing.
  if (!options.dry_run) ZF_TRY(hfexport::CheckTied(report->gather.sources, e.tied, options.buffer_bytes, e.config_path));
  std::vector<std::string> names;
  for (const gather::GatherTensor& t : report->gather.tensors) names.push_back(t.name);
  ZF_ASSIGN_OR_RETURN(report->layout, gather::LayOut(names, report->gather.ties, e.order, options.only));
  report->hf_table = e.table;
  report->hf_family = e.family;
  report->hf_source = e.source;
  report->hf_unmapped = std::move(e.unmapped);
  report->hf_dropped = std::move(e.dropped);
  target->copy_from = hf.base;
  target->copies = std::move(e.copies);
  return Status::OK();
}

// Takes a DCP-planned merge (dcp::PlannedMerge, megatron::PlannedMerge:
// the selection, inputs, gather plan and layout) into the report and
// writes it, while `m`'s open sources are alive.
template <typename Planned>
Status WriteDcpPlanned(Env* env, Planned& m, hfexport::SourceKind kind, const std::string& out,
                       const OutputTarget& target, const MergeOptions& options, MergeReport* report) {
  report->selection = std::move(m.selection);
  report->input_files = std::move(m.input_files);
  report->gather = std::move(m.gather);
  report->layout = std::move(m.layout);
  OutputTarget hf_target = target;
  if (options.hf_base) ZF_TRY(MapToHf(env, kind, options, &hf_target, report));
  report->params = report->layout.entries.size();
  return WritePlanned(env, out, hf_target, options, report);
}

// --tag, --exclude-frozen and --unstack, which only DeepSpeed and Megatron
// folders take, refused for `what` ("a DCP folder") at `path`.
Status RefuseOtherFamiliesFlags(const MergeOptions& options, const std::string& what, const std::string& path) {
  if (options.tag) return Status::InvalidArgument("--tag names a DeepSpeed tag folder; this is " + what).WithPath(path);
  if (options.exclude_frozen)
    return Status::InvalidArgument("--exclude-frozen needs DeepSpeed's records of frozen params; this is " + what)
        .WithPath(path);
  if (options.unstack)
    return Status::InvalidArgument("--unstack splits Megatron's stacked layers; this is " + what).WithPath(path);
  return Status::OK();
}

Status MergeDcp(Env* env, const dcp::DcpFolder& folder, const std::string& out, const OutputTarget& target,
                const MergeOptions& options, MergeReport* report) {
  ZF_TRY(RefuseOtherFamiliesFlags(options, "a DCP folder", folder.path));
  report->kind = CheckpointKind::kDcp;
  report->dcp_folder = folder.path;
  dcp::MergeOptions plan_options;
  plan_options.select = options.select;
  plan_options.dtype = options.hf_base ? std::nullopt : options.dtype;  // --hf: BASE's dtypes, or dtype
  plan_options.only = options.hf_base ? std::vector<std::string>{} : options.only;  // --hf: on HF names
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(dcp::PlannedMerge m, dcp::PlanDcpMerge(env, folder, plan_options));
  report->dcp_schema_2x = m.schema_2x;
  report->dcp_version = m.version;
  return WriteDcpPlanned(env, m, hfexport::SourceKind::kDcp, out, target, options, report);
}

Status MergeMegatron(Env* env, const megatron::Folder& folder, const std::string& out,
                     const OutputTarget& target, const MergeOptions& options, MergeReport* report) {
  if (options.exclude_frozen)
    return Status::InvalidArgument("--exclude-frozen needs DeepSpeed's records of frozen params; this is a Megatron checkpoint")
        .WithPath(folder.checkpoint);
  report->kind = CheckpointKind::kMegatron;
  report->megatron = folder;
  report->dcp_folder = folder.torch_dist;
  report->tag_folder = folder.torch_dist;
  report->tag = folder.iteration_folder;
  // Nothing of common.pt is merged, but torch.load of the folder's
  // common.pt runs what it names: refused like any other input's globals.
  if (!options.keep_unsafe) {
    Result<megatron::CommonState> common = megatron::ReadCommon(env, folder.torch_dist, options.read);
    if (!common.ok() && common.status().code() == Code::kUnsafe) return common.status();
    if (common.ok() && !common->unsafe_globals.empty())
      return pickle::RefuseUnsafe(common->unsafe_globals, megatron::kUnsafeCommonHint)
          .WithPath(model::JoinPath(folder.torch_dist, megatron::kCommonFile));
  }
  megatron::MergeOptions plan_options;
  plan_options.select = options.select;
  plan_options.dtype = options.hf_base ? std::nullopt : options.dtype;
  plan_options.only = options.hf_base ? std::vector<std::string>{} : options.only;
  plan_options.unstack = options.unstack;
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(megatron::PlannedMerge m, megatron::PlanMegatronMerge(env, folder, plan_options));
  report->dcp_schema_2x = true;
  report->core_version = m.core_version;
  report->optimizer = m.optimizer;
  report->nd_restored = m.nd_restored;
  report->unstacked_keys = m.unstacked_keys;
  return WriteDcpPlanned(env, m, hfexport::SourceKind::kMegatron, out, target, options, report);
}

Status MergeRanks(Env* env, const ranks::RankFolder& folder, const std::string& out, OutputTarget target,
                  const MergeOptions& options, MergeReport* report) {
  ZF_TRY(RefuseOtherFamiliesFlags(options, "a folder of rank files", folder.path));
  report->kind = CheckpointKind::kRanks;
  if (!target.single_file && !folder.hf_folder.empty()) {
    // verl and SkyRL keep config and tokenizer in huggingface/.
    target.copy_from = folder.hf_folder;
    ZF_ASSIGN_OR_RETURN(target.copies, output::ModelFileNames(env, folder.hf_folder));
  }
  ranks::MergeOptions plan_options;
  plan_options.select = options.select;
  plan_options.dtype = options.hf_base ? std::nullopt : options.dtype;  // --hf: BASE's dtypes, or dtype
  plan_options.only = options.hf_base ? std::vector<std::string>{} : options.only;  // --hf: on HF names
  plan_options.keep_unsafe = options.keep_unsafe;
  plan_options.buffer_bytes = options.buffer_bytes;
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(ranks::PlannedMerge m, ranks::PlanRankMerge(env, folder, plan_options));
  report->ranks = std::move(m.summary);
  report->warnings = std::move(m.warnings);
  report->input_files = std::move(m.input_files);
  report->gather = std::move(m.gather);
  report->layout = std::move(m.layout);
  // --hf: the state dict's keys are the model's names already (verl and
  // SkyRL save the Hugging Face module): mapped one to one, checked against BASE.
  if (options.hf_base) ZF_TRY(MapToHf(env, hfexport::SourceKind::kHf, options, &target, report));
  report->params = report->layout.entries.size();
  return WritePlanned(env, out, target, options, report);  // before m (the open sources) goes
}

Status MergeZero(Env* env, const std::string& ckpt_dir, const std::string& out, OutputTarget target,
                 const MergeOptions& options, MergeReport* report) {
  if (options.select)
    return Status::InvalidArgument("--select picks keys of a DCP checkpoint; this is no DCP folder").WithPath(ckpt_dir);
  if (options.unstack)
    return Status::InvalidArgument("--unstack splits Megatron's stacked layers; this is no Megatron checkpoint")
        .WithPath(ckpt_dir);
  zero::MergeOptions plan_options;
  plan_options.tag = options.tag;
  plan_options.dtype = options.hf_base ? std::nullopt : options.dtype;  // --hf: BASE's dtypes, or dtype
  plan_options.exclude_frozen = options.exclude_frozen;
  plan_options.only = options.hf_base ? std::vector<std::string>{} : options.only;  // --hf: on HF names
  plan_options.read = options.read;
  ZF_ASSIGN_OR_RETURN(zero::PlannedMerge m, zero::PlanZeroMerge(env, ckpt_dir, plan_options));
  if (!options.keep_unsafe)
    for (const auto* files : {&m.loaded.model_files, &m.loaded.optim_files, &m.loaded.param_files})
      for (const zero::ZeroFile& f : *files)
        if (!f.unsafe_globals.empty()) return pickle::RefuseUnsafe(f.unsafe_globals, pickle::kKeepDrops).WithPath(f.path);
  report->tag_folder = m.loaded.tag_folder;
  report->tag = m.loaded.tag;
  report->warnings = m.loaded.warnings;
  report->input_files = std::move(m.input_files);
  report->model_files = m.loaded.model_files.size();
  report->optim_files = m.loaded.optim_files.size();
  if (!m.loaded.description.model_states.empty()) report->ds_version = m.loaded.description.model_states[0].ds_version;
  report->plan = std::move(m.plan);
  report->layout = std::move(m.layout);
  report->gather = std::move(m.gather);
  report->params = m.params;
  report->frozen_params = m.frozen_params;
  report->buffers = m.buffers;
  // --hf: the module's names are the model's (a Trainer or Accelerate run
  // of a Hugging Face model): mapped one to one, checked against BASE, the
  // tied head kept where BASE stores it.
  if (options.hf_base) ZF_TRY(MapToHf(env, hfexport::SourceKind::kHf, options, &target, report));
  return WritePlanned(env, out, target, options, report);  // before m (the open sources) goes
}

}  // namespace

Result<MergeReport> MergeCheckpoint(Env* env, const std::string& ckpt_dir, const std::string& out,
                                    const MergeOptions& given) {
  MergeReport report;
  report.checkpoint = ckpt_dir;
  MergeOptions options = given;
  if (options.hf_base) {
    if (options.format == MergeFormat::kTorch)
      return Status::InvalidArgument("--hf writes safetensors shards; drop --to torch").WithPath(out);
    options.format = MergeFormat::kSafetensors;
  }
  ZF_ASSIGN_OR_RETURN(OutputTarget target, ResolveOutput(env, out, options));
  if (options.hf_base && target.single_file)
    return Status::InvalidArgument("--hf writes a Hugging Face folder: OUT must be a folder, not a file name").WithPath(out);
  if (!target.single_file) {
    // A training checkpoint folder (Hugging Face Trainer's checkpoint-N/)
    // holds the model's config and tokenizer beside the weights.
    target.copy_from = ckpt_dir;
    ZF_ASSIGN_OR_RETURN(target.copies, output::ModelFileNames(env, ckpt_dir));
  }
  ZF_ASSIGN_OR_RETURN(std::optional<megatron::Folder> megatron_folder, megatron::FindFolder(env, ckpt_dir, options.tag));
  if (megatron_folder) {
    ZF_TRY(MergeMegatron(env, *megatron_folder, out, target, options, &report));
    return report;
  }
  ZF_ASSIGN_OR_RETURN(std::optional<ranks::RankFolder> rank_folder, ranks::FindRankFolder(env, ckpt_dir));
  if (rank_folder) {
    ZF_TRY(MergeRanks(env, *rank_folder, out, target, options, &report));
    return report;
  }
  if (std::optional<dcp::DcpFolder> dcp_folder = dcp::FindDcpFolder(env, ckpt_dir)) {
    ZF_TRY(MergeDcp(env, *dcp_folder, out, target, options, &report));
    return report;
  }
  if (dcp::HoldsDistcpFiles(env, ckpt_dir))
    return Status::Corrupt("holds .distcp files but no .metadata: not a complete Distributed Checkpoint").WithPath(ckpt_dir);
  ZF_TRY(MergeZero(env, ckpt_dir, out, target, options, &report));
  return report;
}

}  // namespace zerofold::merge
