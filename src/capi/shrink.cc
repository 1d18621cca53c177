// zf_shrink: what `zerofold shrink` decides from IN, OUT and its flags,
// through the same convert::RunShrink (convert/request.h).
#include <cstdint>
#include <string>

#include "capi/error.h"
#include "capi/options.h"
#include "convert/request.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

void Add(const shrink::ShrinkReport& r, zf_shrink_report* report) {
  report->input_bytes += r.input_file_bytes;
  report->output_bytes += r.output_file_bytes;
  report->output_files += 1;
  report->tensors += r.tensors;
  report->verified_tensors += r.verified_tensors;
  report->verified_bytes += r.verified_bytes;
  report->unchanged_files += r.copied_unchanged ? 1 : 0;
}

// A part's report counts the part's files (output::PartFiles), other runs every file.
void Add(const convert::ConvertReport& r, const output::PartSpec& part, zf_shrink_report* report) {
  report->input_bytes += r.input_bytes;
  for (size_t k = 0; k < r.files.size(); ++k) {
    if (part.kind == output::PartSpec::Kind::kPart && r.parts.file_parts[k] != part.index) continue;
    const convert::OutputFile& f = r.files[k];
    report->output_bytes += f.bytes;
    report->output_files += 1;
    report->tensors += f.tensors;
  }
}

// The CLI's refusals and choice of operation (convert/request.h), worded
// for the C options.
Status Shrink(const std::string& in, const std::string& out, const zf_shrink_options& o, zf_shrink_report* report) {
  convert::ShrinkRequest request;
  request.in = in;
  request.out = out;
  request.in_place = o.in_place;
  request.force = o.force;
  if (o.to_safetensors) request.to = output::ShardFormat::kSafetensors;
  request.max_shard_bytes = o.max_shard_bytes;
  request.part = o.part;
  request.options = o.shrink;
  if (o.progress != nullptr)
    request.options.progress = [&o](uint64_t done, uint64_t total) {
      o.progress(o.progress_user, "shrink", done, total);
    };
  Env* env = Env::Default();
  ZF_TRY(convert::CheckShrinkRequest(env, request, convert::kOptionWords));
  ZF_ASSIGN_OR_RETURN(convert::ShrinkOutcome outcome, convert::RunShrink(env, request));
  if (outcome.converted) Add(*outcome.converted, request.part, report);
  for (const shrink::ShrinkReport& r : outcome.files) Add(r, report);
  return Status::OK();
}

}  // namespace

}  // namespace zerofold::capi

extern "C" zf_code zf_shrink(const char* in, const char* out, const zf_shrink_options* options,
                             zf_shrink_report* report, zf_error* err) noexcept {
  using zerofold::Status;
  return zerofold::capi::Guard(err, [&]() -> Status {
    zf_shrink_report local{};
    zf_shrink_report* r = report != nullptr ? report : &local;
    *r = zf_shrink_report{};
    const zf_shrink_options defaults;
    const zf_shrink_options& o = options != nullptr ? *options : defaults;
    if (in == nullptr) return Status::InvalidArgument("IN is NULL");
    if (o.in_place) {
      if (out != nullptr && std::string(out) != in)
        return Status::InvalidArgument("in_place replaces IN; OUT must be NULL or IN");
      return zerofold::capi::Shrink(in, in, o, r);
    }
    if (out == nullptr) return Status::InvalidArgument("OUT is NULL; set in_place to replace IN");
    return zerofold::capi::Shrink(in, out, o, r);
  });
}
