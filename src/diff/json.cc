#include "diff/json.h"

#include <string>
#include <vector>

#include "json/writer.h"
#include "model/listing_json.h"

namespace zerofold::diff {

namespace {

void WriteInts(json::Writer& w, const std::vector<int64_t>& v) {
  w.BeginArray();
  for (int64_t x : v) w.Int(x);
  w.EndArray();
}

}  // namespace

Result<std::string> DiffReportJson(const DiffReport& r, const DiffOptions& o) {
  json::Writer w = model::NewJsonWriter();
  w.BeginObject();
  w.Key("same");
  w.Bool(r.same());
  w.Key("mode");
  w.String(o.close_mode() ? "close" : "exact");
  if (o.close_mode()) {
    w.Key("atol");
    w.Double(o.atol.value_or(kDefaultAtol));
    w.Key("rtol");
    w.Double(o.rtol.value_or(kDefaultRtol));
    w.Key("equal_nan");
    w.Bool(o.equal_nan);
  }
  model::WriteStringArray(w, "files_a", r.files_a);
  model::WriteStringArray(w, "files_b", r.files_b);
  model::WriteStringArray(w, "only_in_a", r.only_a);
  model::WriteStringArray(w, "only_in_b", r.only_b);
  w.Key("different");
  w.Uint(r.different);
  w.Key("tensors");
  w.BeginArray();
  for (const TensorDiff& d : r.tensors) {
    w.BeginObject();
    w.Key("name");
    w.String(d.name);
    w.Key("same");
    w.Bool(d.same);
    w.Key("dtype");
    w.BeginArray();
    w.String(torch::Info(d.dtype_a).name);
    w.String(torch::Info(d.dtype_b).name);
    w.EndArray();
    w.Key("shape");
    w.BeginArray();
    WriteInts(w, d.shape_a);
    WriteInts(w, d.shape_b);
    w.EndArray();
    w.Key("values_compared");
    w.Bool(d.values_compared);
    w.Key("xxh3_128");
    if (d.digest_a && d.digest_b) {
      w.BeginArray();
      w.String(d.digest_a->Hex());
      w.String(d.digest_b->Hex());
      w.EndArray();
    } else {
      w.Null();
    }
    if (d.values_compared) {
      w.Key("numel");
      w.Uint(d.numel);
      w.Key("differing");
      w.Uint(d.differing);
      w.Key("first_index");
      if (d.differing > 0 && (!d.first_index.empty() || d.shape_a.empty())) WriteInts(w, d.first_index);
      else w.Null();
      if (d.numeric) {
        w.Key("max_abs_diff");
        w.Double(d.max_abs_diff);
        w.Key("max_rel_diff");
        w.Double(d.max_rel_diff);
      }
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  ZF_ASSIGN_OR_RETURN(std::string text, w.Finish());
  return text + "\n";
}

}  // namespace zerofold::diff
