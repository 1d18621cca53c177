// zf_merge: `zerofold merge` (src/cli/merge_command.cc) over the same
// library call, merge::MergeCheckpoint.
#include <cstdint>
#include <string>

#include "capi/call_env.h"
#include "capi/error.h"
#include "capi/options.h"
#include "merge/merge.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

// A part's report counts the part's files (output::PartFiles), other runs every file.
void Fill(const merge::MergeReport& r, const output::PartSpec& part, zf_merge_report* report) {
  report->zero_stage = r.plan.zero_stage;
  report->world_size = r.kind != merge::CheckpointKind::kZero ? static_cast<uint32_t>(r.gather.sources.size())
                                                           : r.plan.world_size;
  for (size_t k = 0; k < r.files.size(); ++k) {
    if (part.kind == output::PartSpec::Kind::kPart && r.parts.file_parts[k] != part.index) continue;
    const merge::MergeOutputFile& f = r.files[k];
    report->output_files += 1;
    report->output_bytes += f.bytes;
  }
  report->tensor_bytes = r.tensor_bytes;
  report->bytes_read = r.bytes_read;
  report->params = r.params;
  report->frozen_params = r.frozen_params;
  report->buffers = r.buffers;
  report->ties = r.ties;
  report->verified_tensors = r.verified ? r.verified_tensors : 0;
  report->verified_bytes = r.verified ? r.verified_bytes : 0;
}

// The CLI's refusals before the library call, worded for the C options.
Status Merge(const std::string& ckpt, const std::string& out, const zf_merge_options& o, zf_merge_report* report) {
  merge::MergeOptions options = o.merge;
  if (options.dry_run && options.verify) return Status::InvalidArgument("verify checks written files; drop dry_run");
  CallEnv call(o.env, out);
  if (call.callback_outputs() && options.verify && options.part.kind != output::PartSpec::Kind::kFinish)
    return Status::InvalidArgument("verify reads each output back before its commit; output callbacks write once");
  if (o.progress != nullptr)
    options.progress = [&](const char* phase, uint64_t done, uint64_t total) {
      call.Progress(o.progress, o.progress_user, phase, done, total);
    };
  io::ReadPlan reads;
  if (o.reads != nullptr) options.read_plan = &reads;
  Result<merge::MergeReport> r = merge::MergeCheckpoint(call.env(), ckpt, out, options);
  if (!r.ok()) return call.Finish(r.status());
  ZF_TRY(DeliverReads(reads, o.reads, o.reads_user));
  Fill(*r, options.part, report);
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_merge(const char* ckpt_dir, const char* out, const zf_merge_options* options,
                            zf_merge_report* report, zf_error* err) noexcept {
  using zerofold::Status;
  return zerofold::capi::Guard(err, [&]() -> Status {
    zf_merge_report local{};
    zf_merge_report* r = report != nullptr ? report : &local;
    *r = zf_merge_report{};
    if (ckpt_dir == nullptr) return Status::InvalidArgument("CKPT_DIR is NULL");
    if (out == nullptr) return Status::InvalidArgument("OUT is NULL");
    const zf_merge_options defaults;
    return zerofold::capi::Merge(ckpt_dir, out, options != nullptr ? *options : defaults, r);
  });
}
