#include "scan/json.h"

#include "json/writer.h"
#include "model/listing_json.h"

namespace zerofold::scan {

namespace {

json::Writer LineWriter() {
  json::WriteOptions o;
  o.indent = 0;
  o.escape_invalid_utf8 = true;
  return json::Writer(o);
}

Result<std::string> Line(json::Writer& w) {
  ZF_ASSIGN_OR_RETURN(std::string text, w.Finish());
  return text + "\n";
}

}  // namespace

Result<std::string> FileJsonLine(const FileResult& r) {
  json::Writer w = LineWriter();
  w.BeginObject();
  w.Key("type");
  w.String("file");
  w.Key("path");
  w.String(r.path);
  w.Key("verdict");
  w.String(VerdictName(r.verdict));
  w.Key("format");
  w.String(r.format);
  w.Key("error");
  if (r.error.ok()) w.Null();
  else model::WriteJsonError(w, r.error);
  w.Key("note");
  w.String(r.note);
  model::WriteUnsafeGlobals(w, r.unsafe_globals);
  w.Key("file_bytes");
  w.Uint(r.file_bytes);
  w.Key("tensors");
  w.Uint(r.tensors);
  w.Key("stored_bytes");
  w.Uint(r.stored_bytes);
  w.Key("referenced_bytes");
  w.Uint(r.referenced_bytes);
  w.Key("shrink_saves_bytes");
  if (r.shrink_saves) w.Uint(*r.shrink_saves);
  else w.Null();
  w.Key("optimizer_bytes");
  w.Uint(r.optimizer_bytes);
  w.Key("hashed");
  w.Bool(r.hashed);
  w.EndObject();
  return Line(w);
}

Result<std::string> TotalsJsonLine(const Totals& t) {
  json::Writer w = LineWriter();
  w.BeginObject();
  w.Key("type");
  w.String("totals");
  w.Key("files");
  w.Uint(t.files);
  w.Key("verdicts");
  w.BeginObject();
  for (size_t v = 0; v < std::size(t.by_verdict); ++v) {
    w.Key(VerdictName(static_cast<Verdict>(v)));
    w.Uint(t.by_verdict[v]);
  }
  w.EndObject();
  w.Key("file_bytes");
  w.Uint(t.file_bytes);
  w.Key("stored_bytes");
  w.Uint(t.stored_bytes);
  w.Key("referenced_bytes");
  w.Uint(t.referenced_bytes);
  w.Key("shrink_saves_bytes");
  w.Uint(t.shrink_saves);
  w.Key("optimizer_bytes");
  w.Uint(t.optimizer_bytes);
  w.Key("hashed");
  w.Bool(t.hashed);
  w.Key("duplicates");
  w.BeginArray();
  for (const DuplicateGroup& g : t.duplicates) {
    w.BeginObject();
    w.Key("hash");
    w.String(g.hash);
    w.Key("nbytes");
    w.Uint(g.nbytes);
    model::WriteStringArray(w, "copies", g.copies);
    w.Key("wasted_bytes");
    w.Uint(g.wasted());
    w.EndObject();
  }
  w.EndArray();
  w.Key("duplicate_wasted_bytes");
  w.Uint(t.duplicate_wasted_bytes);
  w.EndObject();
  return Line(w);
}

}  // namespace zerofold::scan
