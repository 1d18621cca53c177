#include "cli/shrink_convert.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/part_flag.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "model/listing_json.h"

namespace zerofold::cli {

void WriteVerified(json::Writer& w, size_t tensors, uint64_t bytes) {
  w.Key("verified_tensors");
  w.Uint(tensors);
  w.Key("verified_bytes");
  w.Uint(bytes);
}

void PrintDequantizeSummary(const rewrite::DequantizeReport& r) {
  std::string schemes;
  for (quant::Scheme s : r.schemes) schemes += (schemes.empty() ? "" : ", ") + std::string(quant::SchemeName(s));
  std::printf("dequantized %zu weights (%s) of %s; kept %zu tensors as they are\n", r.groups,
              schemes.empty() ? "none" : schemes.c_str(),
              r.method.empty() ? "a scheme named by its tensors" : ("quant_method " + r.method).c_str(), r.kept);
}

void PrintConvertReport(const rewrite::ConvertReport& r, const output::PartSpec& part, bool dry_run, bool quiet,
                        bool to_stdout) {
  for (const auto& [path, message] : r.warnings) PrintWarning(path, message);
  if (quiet) return;
  std::FILE* out_file = to_stdout ? stderr : stdout;
  const std::string in = r.inputs.size() == 1 ? r.inputs[0] : std::to_string(r.inputs.size()) + " files";
  const bool all = part.kind == output::PartSpec::Kind::kAll;
  uint64_t out = 0;
  for (size_t k = 0; k < r.files.size(); ++k) {
    const rewrite::OutputFile& f = r.files[k];
    if (!all && !InThisPart(part, r.parts, k)) continue;
    const bool complete = std::find(r.parts.skipped.begin(), r.parts.skipped.end(), f.path) != r.parts.skipped.end();
    std::fprintf(out_file, "%s -> %s: %s (%zu tensors)%s\n", in.c_str(), f.path.c_str(), HumanBytes(f.bytes).c_str(),
                 f.tensors, complete ? " [already complete, skipped]" : dry_run ? " [dry run]" : "");
    out += f.bytes;
  }
  if (!r.index.empty()) std::fprintf(out_file, "index %s: total_size %llu\n", r.index.c_str(),
                                    static_cast<unsigned long long>(r.total_size));
  if (all && r.files.size() > 1)
    std::fprintf(out_file, "total: %s -> %s\n", HumanBytes(r.input_bytes).c_str(), HumanBytes(out).c_str());
  if (std::string line = PartSummary(part, r.parts, !r.index.empty()); !line.empty())
    std::fprintf(out_file, "%s\n", line.c_str());
  if (r.verified_tensors > 0)
    std::fprintf(out_file, "verified %zu tensors, %llu bytes\n", r.verified_tensors,
                 static_cast<unsigned long long>(r.verified_bytes));
}

void WriteReadsJson(json::Writer& w, const io::ReadPlan& reads) {
  w.Key("reads");
  w.BeginArray();
  for (const io::ReadRange& r : reads.ranges()) {
    w.BeginObject();
    w.Key("path");
    w.String(r.path);
    w.Key("offset");
    w.Uint(r.offset);
    w.Key("length");
    w.Uint(r.length);
    w.EndObject();
  }
  w.EndArray();
  w.Key("read_bytes");
  w.Uint(reads.bytes());
}

std::string ConvertReportJson(const rewrite::ConvertReport& r, const output::PartSpec& part, bool dry_run,
                              const rewrite::DequantizeReport* dequantized, const io::ReadPlan* reads) {
  json::Writer w = model::NewJsonWriter();
  w.BeginObject();
  w.Key("dry_run");
  w.Bool(dry_run);
  if (reads != nullptr) WriteReadsJson(w, *reads);
  model::WriteStringArray(w, "inputs", r.inputs);
  w.Key("input_bytes");
  w.Uint(r.input_bytes);
  w.Key("files");
  w.BeginArray();
  for (const rewrite::OutputFile& f : r.files) {
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
  model::WriteStringArray(w, "copied", r.copied);
  model::WriteStringArray(w, "removed", r.removed);
  WritePartsJson(w, part, r.parts);
  if (r.verified_tensors > 0) WriteVerified(w, r.verified_tensors, r.verified_bytes);
  if (dequantized != nullptr) {
    w.Key("dequantize");
    w.BeginObject();
    w.Key("quant_method");
    if (dequantized->method.empty()) w.Null();
    else w.String(dequantized->method);
    w.Key("schemes");
    w.BeginArray();
    for (quant::Scheme s : dequantized->schemes) w.String(quant::SchemeName(s));
    w.EndArray();
    w.Key("weights");
    w.Uint(dequantized->groups);
    w.Key("kept");
    w.Uint(dequantized->kept);
    w.EndObject();
  }
  w.Key("warnings");
  w.BeginArray();
  for (const auto& [path, message] : r.warnings) w.String(path + ": " + message);
  w.EndArray();
  w.EndObject();
  Result<std::string> text = w.Finish();
  return text.ok() ? *text : std::string("{}");
}

}  // namespace zerofold::cli
