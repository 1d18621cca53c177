#include "rewrite/request.h"

#include <string>

#include "rewrite/to_safetensors.h"
#include "rewrite/torch_shards.h"
#include "io/zstd_stream.h"
#include "model/hf_folder.h"
#include "model/listing.h"

namespace zerofold::rewrite {

namespace {

Status Refuse(std::string message) { return Status::InvalidArgument(std::move(message)); }

std::string Str(const char* s) { return s; }

}  // namespace

Result<output::Target> ResolveRequestTarget(Env* env, const ShrinkRequest& r, const RequestWords& w) {
  output::TargetRequest t;
  t.input_is_folder = env->IsDirectory(r.in);
  t.to = r.to;
  if (!r.convert) t.default_format = output::ShardFormat::kTorch;
  if (r.dequantize) {
    t.default_format = output::ShardFormat::kSafetensors;
    t.streams = false;
  }
  t.shards = r.max_shard_bytes.has_value();
  t.part = r.part.kind != output::PartSpec::Kind::kAll;
  t.to_word = w.to;
  t.shards_word = w.max_shard_size;
  t.choose_format = w.choose_format;
  t.part_word = w.part;
  return output::ResolveTarget(env, r.out, t);
}

Result<bool> IsSafetensorsInput(Env* env, const std::string& in) {
  if (io::IsStreamName(in) || !env->FileExists(in)) return false;
  if (env->IsDirectory(in)) {
    auto has = [&](const char* name) { return env->FileExists(model::JoinPath(in, name)); };
    return !has(model::kTorchIndexName) && !has(model::kTorchSingleName) &&
           (has(model::kSafetensorsIndexName) || has(model::kSafetensorsSingleName));
  }
  Result<std::unique_ptr<RandomSource>> src = env->OpenRandom(in);
  if (!src.ok()) return src.status();
  ZF_ASSIGN_OR_RETURN(model::FileFormat format, model::SniffFormat(**src));
  return format == model::FileFormat::kSafetensors;
}

namespace {

// --dequantize's refusals (the request's flags that do not apply to it).
Status CheckDequantizeRequest(Env* env, const ShrinkRequest& r, const RequestWords& w) {
  const ShrinkOptions& o = r.options;
  const char* flag = "--dequantize";
  if (o.verify && o.dry_run) return Refuse(Str(w.verify) + " reads the output back; " + w.dry_run + " writes none");
  if (r.in_place) return Refuse(Str(flag) + " writes new files; give IN and OUT");
  if (io::IsStreamName(r.in) || r.in.ends_with(".zst"))
    return Refuse(Str(flag) + " reads a safetensors file or folder at random, not a stream ('" + r.in + "')");
  if (o.dtype) return Refuse(Str(flag) + " chooses the dtype of the weights it decodes; " + w.dtype + " does not apply");
  if (!o.select.empty() || !o.only.empty())
    return Refuse(Str(flag) + " writes every tensor; " + w.select + " and " + w.only + " do not apply");
  if (r.dedupe_tied) return Refuse(Str(flag) + " writes every name once already; " + w.dedupe_tied + " does not apply");
  if (!env->FileExists(r.in)) return Status::NotFound("no such file or folder").WithPath(r.in);
  Result<bool> same = SameFile(env, r.in, r.out);
  if (!same.ok()) return same.status();
  if (r.out == r.in || *same) return Refuse("OUT is IN; convert writes a new file, leaving IN as it is");
  ZF_ASSIGN_OR_RETURN(output::Target target, ResolveRequestTarget(env, r, w));
  if (target.kind == output::TargetKind::kFile && !o.dry_run)
    ZF_TRY(output::CheckTargets(env, {r.in}, {{r.out}, {}}, r.force));
  return Status::OK();
}

}  // namespace

Status CheckShrinkRequest(Env* env, const ShrinkRequest& r, const RequestWords& w) {
  if (r.dequantize) return CheckDequantizeRequest(env, r, w);
  const ShrinkOptions& o = r.options;
  const bool stream_in = io::IsStreamName(r.in);
  const bool shards = r.max_shard_bytes.has_value();
  if (o.verify && o.dry_run) return Refuse(Str(w.verify) + " reads the output back; " + w.dry_run + " writes none");
  if (!r.convert) {
    ZF_ASSIGN_OR_RETURN(bool safetensors, IsSafetensorsInput(env, r.in));
    if (safetensors)
      return Refuse("'" + r.in +
                    "' is safetensors, which stores every tensor in exactly its own bytes: there is nothing to "
                    "shrink. To change its format, dtype, shards or selection, use: zerofold convert");
  }
  if (r.in_place && stream_in) return Refuse(Str(w.in_place) + " rewrites a file; '" + r.in + "' is a stream");
  if (!r.in_place && r.out != io::kStdioName) {
    // OUT names IN, also as "./IN", by an absolute path, a symlink or a hard
    // link (files or folders): without in place, the input stays as it is.
    // The files inside folders are checked by the operations
    // (output/target.h CheckTargets).
    Result<bool> same = r.in == io::kStdioName ? Result<bool>(false) : SameFile(env, r.in, r.out);
    if (!same.ok()) return same.status();
    if (r.out == r.in || *same)
      return Refuse(r.convert ? Str("OUT is IN; convert writes a new file, leaving IN as it is")
                              : Str("OUT is IN; ") + w.set + " " + w.in_place + " to replace the input");
  }
  ZF_ASSIGN_OR_RETURN(output::Target target, ResolveRequestTarget(env, r, w));
  const bool folder = target.kind == output::TargetKind::kFolder;
  const bool to_stdout = target.kind == output::TargetKind::kStdout;
  const bool stream_out = to_stdout || target.zstd;
  const bool to_safetensors = target.format == output::ShardFormat::kSafetensors;
  if (stream_in && (to_safetensors || folder))
    return Refuse("'" + r.in +
                  "' is a stream, read in one forward pass; safetensors output (its header lists every tensor "
                  "before their bytes) and a folder OUT (shards take tensors in an order of their own) read the "
                  "input at random: save it to a file first");
  // One file OUT: refused when it exists, before anything is read (a folder
  // OUT's files are planned first: the operations check them).
  if (!r.in_place && !o.dry_run && !to_stdout && !folder)
    ZF_TRY(output::CheckTargets(env, {r.in}, {{r.out}, {}}, r.force));
  const bool in_folder = env->IsDirectory(r.in);
  if (o.verify) {
    // verify re-reads a torch file output and compares its tensors with the input's, bit for bit.
    std::string why;
    if (stream_in || stream_out) why = "a stream ('-', .zst) cannot be re-read";
    else if (o.dtype) why = Str(w.dtype) + " changes the tensors";
    if (!why.empty()) return Refuse(Str(w.verify) + ": " + why);
  }
  if (r.dedupe_tied && !to_safetensors)
    return Refuse(Str(w.dedupe_tied) + " needs " + w.to_safetensors +
                  " (torch output keeps tied names on one storage)");
  if (!o.select.empty() && in_folder) return Refuse(Str(w.select) + " takes one checkpoint file, not a folder");
  if (!o.select.empty() && r.in_place) return Refuse(Str(w.select) + " with " + w.in_place + " would drop the rest of IN");
  if (!o.only.empty() && r.in_place) return Refuse(Str(w.only) + " with " + w.in_place + " would drop the rest of IN");
  if (to_safetensors && r.in_place) return Refuse(Str(w.to_safetensors) + " writes new files; give IN and OUT");
  if (!to_safetensors && shards && in_folder)
    return Refuse(Str("a torch folder keeps its shards; re-shard with ") + w.to_safetensors);
  if (in_folder && !folder && !to_safetensors)
    return Refuse(Str("IN is a folder, whose torch shards are written into a folder: end OUT with '/' (") +
                  w.to_safetensors + " writes one file)");
  if (r.part.kind != output::PartSpec::Kind::kAll && r.in_place)
    return Refuse(Str(w.part) + " with " + w.in_place + " would leave IN half rewritten; give IN and OUT");
  return Status::OK();
}

namespace {

// The conversion's options from a request's.
ConvertOptions ConvertOptionsOf(const ShrinkRequest& r, const ShrinkOptions& o, bool folder) {
  ConvertOptions convert;
  convert.convert = r.convert;
  convert.read = o.read;
  convert.dtype = o.dtype;
  convert.select = o.select;
  convert.only = o.only;
  convert.folder = folder;
  convert.max_shard_bytes = r.max_shard_bytes.value_or(output::kDefaultMaxShardBytes);
  convert.dedupe_tied = r.dedupe_tied;
  convert.keep_unsafe = o.keep_unsafe;
  convert.dry_run = o.dry_run;
  convert.verify = o.verify;
  convert.zstd = o.zstd;
  convert.buffer_bytes = o.buffer_bytes;
  convert.progress = o.progress;
  convert.read_plan = o.read_plan;
  convert.part = r.part;
  convert.force = r.force;
  return convert;
}

}  // namespace

Result<ShrinkOutcome> RunShrink(Env* env, const ShrinkRequest& r) {
  ShrinkOptions o = r.options;
  o.convert = r.convert;
  const bool in_folder = env->IsDirectory(r.in);
  ZF_ASSIGN_OR_RETURN(output::Target target, ResolveRequestTarget(env, r, kFlagWords));
  const bool folder = target.kind == output::TargetKind::kFolder;
  const bool to_safetensors = target.format == output::ShardFormat::kSafetensors;
  ShrinkOutcome outcome;
  if (r.dequantize) {
    ZF_ASSIGN_OR_RETURN(DequantizeReport report,
                        Dequantize(env, r.in, r.out, ConvertOptionsOf(r, o, folder), *r.dequantize, target.format));
    outcome.converted = report.convert;
    outcome.dequantized = std::move(report);
    return outcome;
  }
  if (to_safetensors || (!in_folder && folder)) {
    ConvertOptions convert = ConvertOptionsOf(r, o, folder);
    ZF_ASSIGN_OR_RETURN(ConvertReport report, to_safetensors ? ConvertToSafetensors(env, r.in, r.out, convert)
                                                               : ShardTorchFile(env, r.in, r.out, convert));
    outcome.converted = std::move(report);
  } else if (io::IsStreamName(r.in)) {
    ZF_ASSIGN_OR_RETURN(ShrinkReport report, ShrinkStream(env, r.in, r.out, o));
    outcome.files.push_back(std::move(report));
  } else if (in_folder) {
    ZF_ASSIGN_OR_RETURN(FolderReport report, ShrinkFolder(env, r.in, r.out, o, r.part, r.force));
    outcome.files = std::move(report.shards);
    outcome.index = std::move(report.index);
    outcome.parts = std::move(report.parts);
  } else {
    ZF_ASSIGN_OR_RETURN(ShrinkReport report, ShrinkFile(env, r.in, r.out, o));
    outcome.files.push_back(std::move(report));
  }
  return outcome;
}

}  // namespace zerofold::rewrite
