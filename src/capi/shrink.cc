// zf_shrink and zf_convert: what `zerofold shrink` and `zerofold convert`
// decide from IN, OUT and their flags, through the same rewrite::RunShrink
// (rewrite/request.h).
#include <cstdint>
#include <string>

#include "capi/call_env.h"
#include "capi/error.h"
#include "capi/options.h"
#include "rewrite/request.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

void Add(const rewrite::ShrinkReport& r, zf_shrink_report* report) {
  report->input_bytes += r.input_file_bytes;
  report->output_bytes += r.output_file_bytes;
  report->output_files += 1;
  report->tensors += r.tensors;
  report->verified_tensors += r.verified_tensors;
  report->verified_bytes += r.verified_bytes;
  report->unchanged_files += r.copied_unchanged ? 1 : 0;
}

// A part's report counts the part's files (output::PartFiles), other runs every file.
void Add(const rewrite::ConvertReport& r, const output::PartSpec& part, zf_shrink_report* report) {
  report->input_bytes += r.input_bytes;
  report->verified_tensors += r.verified_tensors;
  report->verified_bytes += r.verified_bytes;
  for (size_t k = 0; k < r.files.size(); ++k) {
    if (part.kind == output::PartSpec::Kind::kPart && r.parts.file_parts[k] != part.index) continue;
    const rewrite::OutputFile& f = r.files[k];
    report->output_bytes += f.bytes;
    report->output_files += 1;
    report->tensors += f.tensors;
  }
}

// The CLI's refusals and choice of operation (rewrite/request.h), worded
// for the C options.
Status Shrink(bool convert, const std::string& in, const std::string& out, const zf_shrink_options& o,
              zf_shrink_report* report) {
  rewrite::ShrinkRequest request;
  request.convert = convert;
  request.in = in;
  request.out = out;
  request.in_place = o.in_place;
  request.force = o.force;
  request.dedupe_tied = o.dedupe_tied;
  // Unset: OUT's name says the format (output/target.h); convert refuses a
  // name that does not.
  if (o.to_safetensors)
    request.to = *o.to_safetensors ? output::ShardFormat::kSafetensors : output::ShardFormat::kTorch;
  request.max_shard_bytes = o.max_shard_bytes;
  request.part = o.part;
  request.options = o.shrink;
  if (o.dequantize) {
    if (!convert) return Status::InvalidArgument("dequantize is an option of zf_convert; zf_shrink keeps every dtype");
    request.dequantize = o.dequantize;
  }
  CallEnv call(o.env, out);
  if (call.callback_outputs() || call.callback_inputs()) {
    if (o.in_place) return Status::InvalidArgument("in_place replaces files of the operating system; with callbacks, write OUT");
    if (call.callback_outputs() && o.shrink.verify && o.part.kind != output::PartSpec::Kind::kFinish)
      return Status::InvalidArgument("verify reads each output back before its commit; output callbacks write once");
  }
  const char* phase = convert ? "convert" : "shrink";
  if (o.progress != nullptr)
    request.options.progress = [&](const output::SetProgress& p) {
      call.Progress(o.progress, o.progress_user, p.verifying ? "verify" : phase, p.done, p.total);
    };
  io::ReadPlan reads;
  if (o.reads != nullptr) request.options.read_plan = &reads;
  Env* env = call.env();
  ZF_TRY(rewrite::CheckShrinkRequest(env, request, rewrite::kOptionWords));
  Result<rewrite::ShrinkOutcome> outcome = rewrite::RunShrink(env, request);
  if (!outcome.ok()) return call.Finish(outcome.status());
  ZF_TRY(DeliverReads(reads, o.reads, o.reads_user));
  if (outcome->converted) Add(*outcome->converted, request.part, report);
  for (const rewrite::ShrinkReport& r : outcome->files) Add(r, report);
  return Status::OK();
}

// zf_shrink and zf_convert: the arguments, then Shrink.
zf_code Run(bool convert, const char* in, const char* out, const zf_shrink_options* options,
            zf_shrink_report* report, zf_error* err) noexcept {
  return Guard(err, [&]() -> Status {
    zf_shrink_report local{};
    zf_shrink_report* r = report != nullptr ? report : &local;
    *r = zf_shrink_report{};
    const zf_shrink_options defaults;
    const zf_shrink_options& o = options != nullptr ? *options : defaults;
    if (in == nullptr) return Status::InvalidArgument("IN is NULL");
    if (o.in_place) {
      if (out != nullptr && std::string(out) != in)
        return Status::InvalidArgument("in_place replaces IN; OUT must be NULL or IN");
      return Shrink(convert, in, in, o, r);
    }
    if (out == nullptr) return Status::InvalidArgument("OUT is NULL; set in_place to replace IN");
    return Shrink(convert, in, out, o, r);
  });
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_shrink(const char* in, const char* out, const zf_shrink_options* options,
                             zf_shrink_report* report, zf_error* err) noexcept {
  return zerofold::capi::Run(false, in, out, options, report, err);
}

extern "C" zf_code zf_convert(const char* in, const char* out, const zf_shrink_options* options,
                              zf_shrink_report* report, zf_error* err) noexcept {
  return zerofold::capi::Run(true, in, out, options, report, err);
}
