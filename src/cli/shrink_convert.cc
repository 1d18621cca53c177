#include "cli/shrink_convert.h"

#include <cstdio>
#include <string>

#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/report.h"
#include "ops/cast.h"
#include "ops/to_safetensors.h"
#include "ops/torch_shards.h"

namespace zerofold::cli {

namespace {

constexpr const char* kCommand = "shrink";

void PrintConvertReport(const ops::ConvertReport& r, bool dry_run, bool quiet) {
  for (const auto& [path, message] : r.warnings) PrintWarning(path, message);
  if (quiet) return;
  const std::string in = r.inputs.size() == 1 ? r.inputs[0] : std::to_string(r.inputs.size()) + " files";
  uint64_t out = 0;
  for (const ops::OutputFile& f : r.files) {
    std::printf("%s -> %s: %s (%zu tensors)%s\n", in.c_str(), f.path.c_str(), HumanBytes(f.bytes).c_str(), f.tensors,
                dry_run ? " [dry run]" : "");
    out += f.bytes;
  }
  if (!r.index.empty()) std::printf("index %s: total_size %llu\n", r.index.c_str(),
                                    static_cast<unsigned long long>(r.total_size));
  if (r.files.size() > 1) std::printf("total: %s -> %s\n", HumanBytes(r.input_bytes).c_str(), HumanBytes(out).c_str());
}

void WriteStrings(json::Writer& w, const char* key, const std::vector<std::string>& v) {
  w.Key(key);
  w.BeginArray();
  for (const std::string& s : v) w.String(s);
  w.EndArray();
}

std::string ConvertReportJson(const ops::ConvertReport& r, bool dry_run) {
  json::Writer w = NewJsonWriter();
  w.BeginObject();
  w.Key("dry_run");
  w.Bool(dry_run);
  WriteStrings(w, "inputs", r.inputs);
  w.Key("input_bytes");
  w.Uint(r.input_bytes);
  w.Key("files");
  w.BeginArray();
  for (const ops::OutputFile& f : r.files) {
    w.BeginObject();
    w.Key("path");
    w.String(f.path);
    w.Key("bytes");
    w.Uint(f.bytes);
    w.Key("tensors");
    w.Uint(f.tensors);
    w.EndObject();
  }
  w.EndArray();
  w.Key("index");
  if (r.index.empty()) w.Null();
  else w.String(r.index);
  w.Key("total_size");
  w.Uint(r.total_size);
  WriteStrings(w, "copied", r.copied);
  WriteStrings(w, "removed", r.removed);
  w.Key("warnings");
  w.BeginArray();
  for (const auto& [path, message] : r.warnings) w.String(path + ": " + message);
  w.EndArray();
  w.EndObject();
  Result<std::string> text = w.Finish();
  return text.ok() ? *text : std::string("{}");
}

}  // namespace

bool OutputIsFolder(Env* env, const std::string& in, const std::string& out) {
  return env->IsDirectory(in) || env->IsDirectory(out) || (!out.empty() && out.back() == '/');
}

int RunShrinkConversion(const ParsedArgs& args, const std::string& in, const std::string& out,
                        ops::ShrinkOptions& shrink, Progress& progress, bool quiet, bool as_json) {
  const std::string to = args.Value("to").value_or("torch");
  if (to != "torch" && to != "safetensors") return UsageError(kCommand, "--to takes torch or safetensors, not '" + to + "'");
  const bool safetensors = to == "safetensors";
  if (auto name = args.Value("dtype")) {
    shrink.dtype = ops::ParseCastTarget(*name);
    if (!shrink.dtype) return UsageError(kCommand, "--dtype takes bfloat16, float16 or float32, not '" + *name + "'");
  }
  shrink.select = args.Value("select").value_or("");
  const bool explicit_limit = args.Has("max-shard-size");
  uint64_t limit = ops::kDefaultMaxShardBytes;
  if (auto v = args.Value("max-shard-size")) {
    Result<uint64_t> n = ParseSize(*v);
    if (!n.ok() || *n == 0) return UsageError(kCommand, "--max-shard-size needs a size such as 5GB, 500MB or 2GiB");
    limit = *n;
  }
  Env* env = Env::Default();
  const bool in_folder = env->IsDirectory(in);
  const bool folder = OutputIsFolder(env, in, out);
  const bool in_place = args.Has("in-place");
  if (args.Has("dedupe-tied") && !safetensors)
    return UsageError(kCommand, "--dedupe-tied needs --to safetensors (torch output keeps tied names on one storage)");
  if (!shrink.select.empty() && in_folder) return UsageError(kCommand, "--select takes one checkpoint file, not a folder");
  if (!shrink.select.empty() && in_place) return UsageError(kCommand, "--select with --in-place would drop the rest of IN");
  if (safetensors && in_place) return UsageError(kCommand, "--to safetensors writes new files; give IN and OUT");
  if (explicit_limit && !folder)
    return UsageError(kCommand, "--max-shard-size writes shards into a folder; make OUT a folder (end it with '/')");
  if (!safetensors && explicit_limit && in_folder)
    return UsageError(kCommand, "a torch folder keeps its shards; re-shard with --to safetensors");
  if (!safetensors && (in_folder || !folder)) return -1;  // ShrinkFile / ShrinkFolder

  ops::ConvertOptions options;
  options.read = shrink.read;
  options.dtype = shrink.dtype;
  options.select = shrink.select;
  options.folder = folder;
  options.max_shard_bytes = limit;
  options.dedupe_tied = args.Has("dedupe-tied");
  options.keep_unsafe = shrink.keep_unsafe;
  options.dry_run = shrink.dry_run;
  options.buffer_bytes = shrink.buffer_bytes;
  options.progress = [&](uint64_t done, uint64_t total) { progress.Update(kCommand + (" " + in), done, total); };
  Result<ops::ConvertReport> r = safetensors ? ops::ConvertToSafetensors(env, in, out, options)
                                             : ops::ShardTorchFile(env, in, out, options);
  progress.Clear();
  if (!r.ok()) {
    return CommandFailed(r.status(), as_json);
  }
  PrintConvertReport(*r, options.dry_run, quiet || as_json);
  if (as_json) std::printf("%s\n", ConvertReportJson(*r, options.dry_run).c_str());
  return kExitOk;
}

}  // namespace zerofold::cli
