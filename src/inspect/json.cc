#include "inspect/json.h"


#include "json/writer.h"
#include "model/listing_json.h"

namespace zerofold::inspect {

namespace {

// {"path", "format":"deepspeed", "deepspeed":{...}} (README.md).
void WriteZeroJson(json::Writer& w, const zero::ZeroInspection& z) {
  w.BeginObject();
  w.Key("path"); w.String(z.checkpoint);
  w.Key("format"); w.String("deepspeed");
  w.Key("deepspeed");
  w.BeginObject();
  w.Key("layout"); w.String(z.layout);
  w.Key("tag_folder"); w.String(z.tag_folder);
  w.Key("tag"); w.String(z.tag);
  w.Key("ds_version"); w.String(z.ds_version);
  w.Key("zero_stage"); w.Int(z.stage);
  w.Key("world_size"); w.Uint(z.world_size);
  w.Key("optimizer"); w.String(z.optimizer);
  model::WriteStringArray(w, "master_dtypes", z.master_dtypes);
  model::WriteStringArray(w, "module_dtypes", z.module_dtypes);
  w.Key("params"); w.Uint(z.params);
  w.Key("frozen_params"); w.Uint(z.frozen_params);
  w.Key("buffers"); w.Uint(z.buffers);
  w.Key("ties"); w.Uint(z.ties);
  w.Key("master_bytes"); w.Uint(z.master_bytes);
  w.Key("optimizer_state_bytes"); w.Uint(z.optimizer_state_bytes);
  w.Key("module_bytes"); w.Uint(z.module_bytes);
  w.Key("files");
  w.BeginArray();
  for (const zero::ZeroFileInfo& f : z.files) {
    w.BeginObject();
    w.Key("path"); w.String(f.path);
    w.Key("role"); w.String(f.role);
    w.Key("bytes"); w.Uint(f.bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("merge");
  w.BeginObject();
  w.Key("mergeable"); w.Bool(z.mergeable);
  w.Key("tensors"); w.Uint(z.merge_tensors);
  w.Key("bytes"); w.Uint(z.merge_bytes);
  model::WriteStringArray(w, "linked_by_value", z.linked_by_value);
  w.Key("refusal");
  if (z.refusal.ok()) w.Null();
  else model::WriteJsonError(w, z.refusal);
  w.EndObject();
  w.EndObject();
  w.EndObject();
}

}  // namespace

// {"path", "format": "quantized", "quantized": {"quant_method", "schemes",
// "groups": [{"name", "scheme", "shape", "inputs"}], "kept", "refusal"}}.
void WriteQuantizedJson(json::Writer& w, const std::string& path, const Quantized& q) {
  w.BeginObject();
  w.Key("path");
  w.String(path);
  w.Key("format");
  w.String("quantized");
  w.Key("quantized");
  w.BeginObject();
  w.Key("quant_method");
  if (q.method.empty()) w.Null();
  else w.String(q.method);
  w.Key("schemes");
  w.Strings(q.schemes);
  w.Key("groups");
  w.BeginArray();
  for (const Quantized::Group& g : q.groups) {
    w.BeginObject();
    w.Key("name");
    w.String(g.name);
    w.Key("scheme");
    w.String(g.scheme);
    w.Key("shape");
    w.BeginArray();
    for (uint64_t d : g.shape) w.Uint(d);
    w.EndArray();
    w.Key("inputs");
    w.Strings(g.inputs);
    w.EndObject();
  }
  w.EndArray();
  w.Key("kept");
  w.Uint(q.kept);
  w.Key("refusal");
  if (q.refusal.ok()) w.Null();
  else w.String(q.refusal.ToString());
  w.EndObject();
  w.EndObject();
}

Result<std::string> ReportJson(const Report& report) {
  model::JsonFiles doc;
  for (const PathReport& p : report.paths) {
    if (!p.error.ok()) {
      doc.AddError(p.path, p.error);
    } else if (p.megatron) {
      doc.AddWith([&p](json::Writer& w) { megatron::WriteInspectionJson(w, *p.megatron); });
    } else if (p.ranks) {
      doc.AddWith([&p](json::Writer& w) { ranks::WriteInspectionJson(w, *p.ranks); });
    } else if (p.dcp) {
      doc.AddWith([&p](json::Writer& w) { dcp::WriteListingJson(w, *p.dcp); });
    } else if (p.deepspeed) {
      doc.AddWith([&p](json::Writer& w) { WriteZeroJson(w, *p.deepspeed); });
    }
    for (const FileReport& f : p.files) {
      if (f.listing.ok()) doc.Add(*f.listing);
      else doc.AddError(f.path, f.listing.status());
    }
    if (p.quantized) doc.AddWith([&p](json::Writer& w) { WriteQuantizedJson(w, p.path, *p.quantized); });
    if (p.folder) doc.AddFolder(*p.folder);
  }
  return doc.Finish();
}

}  // namespace zerofold::inspect
