#include "cli/shrink_convert.h"

#include <cstdio>
#include <string>

#include "cli/progress.h"
#include "cli/report.h"
#include "model/listing_json.h"

namespace zerofold::cli {

namespace {

void WriteStrings(json::Writer& w, const char* key, const std::vector<std::string>& v) {
  w.Key(key);
  w.BeginArray();
  for (const std::string& s : v) w.String(s);
  w.EndArray();
}

}  // namespace

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

std::string ConvertReportJson(const ops::ConvertReport& r, bool dry_run) {
  json::Writer w = model::NewJsonWriter();
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

}  // namespace zerofold::cli
