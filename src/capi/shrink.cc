// zf_shrink: what `zerofold shrink` decides from IN, OUT and its flags
// (src/cli/shrink_command.cc, src/cli/shrink_convert.cc), over the same
// library calls: ops::ShrinkFile, ShrinkStream and ShrinkFolder for torch
// output, one file per input file; ops::ConvertToSafetensors and
// ShardTorchFile for safetensors or a folder of shards.
#include <cstdint>
#include <string>

#include "capi/error.h"
#include "capi/options.h"
#include "io/zstd_stream.h"
#include "ops/convert.h"
#include "ops/shrink.h"
#include "ops/to_safetensors.h"
#include "ops/torch_shards.h"
#include "zerofold/env.h"
#include "zerofold/zerofold.h"

namespace zerofold::capi {

namespace {

// As the CLI: OUT is a folder in transformers' layout when IN is a folder,
// OUT is an existing folder, or OUT ends with '/'.
bool OutputIsFolder(Env* env, const std::string& in, const std::string& out) {
  return env->IsDirectory(in) || env->IsDirectory(out) || (!out.empty() && out.back() == '/');
}

void Add(const ops::ShrinkReport& r, zf_shrink_report* report) {
  report->input_bytes += r.input_file_bytes;
  report->output_bytes += r.output_file_bytes;
  report->output_files += 1;
  report->tensors += r.tensors;
  report->verified_tensors += r.verified_tensors;
  report->verified_bytes += r.verified_bytes;
}

void Add(const ops::ConvertReport& r, zf_shrink_report* report) {
  report->input_bytes += r.input_bytes;
  for (const ops::OutputFile& f : r.files) {
    report->output_bytes += f.bytes;
    report->output_files += 1;
    report->tensors += f.tensors;
  }
}

// The refusals of the CLI's usage checks, in its order, worded for the C
// options; then the library call that does the work.
Status Shrink(const std::string& in, const std::string& out, const zf_shrink_options& o, zf_shrink_report* report) {
  Env* env = Env::Default();
  ops::ShrinkOptions options = o.shrink;
  if (o.progress != nullptr)
    options.progress = [&o](uint64_t done, uint64_t total) { o.progress(o.progress_user, "shrink", done, total); };
  const bool stream_in = io::IsStreamName(in);
  const bool stream_out = io::IsStreamName(out);
  const bool to_stdout = out == io::kStdioName;
  const bool in_folder = env->IsDirectory(in);
  const bool folder = OutputIsFolder(env, in, out);
  const bool shards = o.max_shard_bytes.has_value();

  if (options.verify && options.dry_run)
    return Status::InvalidArgument("verify reads the output back; dry_run writes none");
  if ((stream_in || stream_out) && (o.to_safetensors || shards))
    return Status::InvalidArgument(
        "to_safetensors and max_shard_size write files of their own; - and .zst names are streams");
  if (o.in_place && (stream_in || stream_out))
    return Status::InvalidArgument("in_place rewrites a file; '" + in + "' is a stream");
  if (!o.in_place && !options.dry_run && !to_stdout && !o.force && env->FileExists(out) && !env->IsDirectory(out))
    return Status::InvalidArgument("'" + out + "' exists; set force to replace it or in_place to shrink IN itself");
  if (!o.in_place && !to_stdout) {
    // OUT names IN, also by another path, a symlink or a hard link.
    Result<bool> same = stream_in ? Result<bool>(false) : SameFile(env, in, out);
    if (!same.ok()) return same.status();
    if (out == in || *same) return Status::InvalidArgument("OUT is IN; set in_place to replace the input");
  }
  if (options.verify) {
    const char* why = nullptr;
    if (stream_in || stream_out) why = "a stream ('-', .zst) cannot be re-read";
    else if (options.dtype) why = "dtype changes the tensors";
    else if (o.to_safetensors) why = "it compares torch file output only";
    else if (!in_folder && folder) why = "it compares one output file per input file";
    if (why != nullptr) return Status::InvalidArgument(std::string("verify: ") + why);
  }
  if (!options.select.empty() && in_folder)
    return Status::InvalidArgument("select takes one checkpoint file, not a folder");
  if (!options.select.empty() && o.in_place)
    return Status::InvalidArgument("select with in_place would drop the rest of IN");
  if (o.to_safetensors && o.in_place) return Status::InvalidArgument("to_safetensors writes new files; give IN and OUT");
  if (shards && !folder)
    return Status::InvalidArgument("max_shard_size writes shards into a folder; make OUT a folder (end it with '/')");
  if (!o.to_safetensors && shards && in_folder)
    return Status::InvalidArgument("a torch folder keeps its shards; re-shard with to_safetensors");

  if (o.to_safetensors || (!in_folder && folder)) {
    ops::ConvertOptions convert;
    convert.read = options.read;
    convert.dtype = options.dtype;
    convert.select = options.select;
    convert.folder = folder;
    convert.max_shard_bytes = o.max_shard_bytes.value_or(ops::kDefaultMaxShardBytes);
    convert.keep_unsafe = options.keep_unsafe;
    convert.dry_run = options.dry_run;
    convert.buffer_bytes = options.buffer_bytes;
    convert.progress = options.progress;
    Result<ops::ConvertReport> r = o.to_safetensors ? ops::ConvertToSafetensors(env, in, out, convert)
                                                    : ops::ShardTorchFile(env, in, out, convert);
    if (!r.ok()) return r.status();
    Add(*r, report);
    return Status::OK();
  }
  if (stream_in) {
    Result<ops::ShrinkReport> r = ops::ShrinkStream(env, in, out, options);
    if (!r.ok()) return r.status();
    Add(*r, report);
  } else if (in_folder) {
    if (stream_out) return Status::InvalidArgument("IN is a folder, so OUT must be a folder, not '" + out + "'");
    Result<ops::FolderReport> r = ops::ShrinkFolder(env, in, out, options);
    if (!r.ok()) return r.status();
    for (const ops::ShrinkReport& shard : r->shards) Add(shard, report);
  } else {
    Result<ops::ShrinkReport> r = ops::ShrinkFile(env, in, out, options);
    if (!r.ok()) return r.status();
    Add(*r, report);
  }
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
