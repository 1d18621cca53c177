#include "model/listing_json.h"

#include <algorithm>

#include "pickle/safety.h"

namespace zerofold::model {

namespace {

void WritePath(json::Writer& w, const std::vector<torch::PathElem>& path) {
  w.BeginArray();
  for (const torch::PathElem& e : path) {
    switch (e.type) {
      case torch::PathElem::Type::kStrKey: w.String(e.str); break;
      case torch::PathElem::Type::kIntKey:
      case torch::PathElem::Type::kIndex: w.Int(e.num); break;
      case torch::PathElem::Type::kAttr:
        w.BeginObject();
        w.Key("attr");
        w.String(e.str);
        w.EndObject();
        break;
    }
  }
  w.EndArray();
}

void WriteInts(json::Writer& w, const std::vector<int64_t>& v) {
  w.BeginArray();
  for (int64_t x : v) w.Int(x);
  w.EndArray();
}

}  // namespace

json::Writer NewJsonWriter() {
  json::WriteOptions options;
  options.escape_invalid_utf8 = true;
  return json::Writer(options);
}

void WriteUnsafeGlobals(json::Writer& w, const std::vector<std::string>& globals) {
  w.Key("unsafe_globals");
  w.Strings(globals);
  w.Key("unsafe_reasons");
  w.BeginObject();
  for (const std::string& g : globals) {
    w.Key(g);
    w.String(pickle::UnsafeReason(g));
  }
  w.EndObject();
}

JsonFiles::JsonFiles() : w_(NewJsonWriter()) {
  w_.BeginObject();
  w_.Key("files");
  w_.BeginArray();
}

void WriteStringArray(json::Writer& w, std::string_view key, const std::vector<std::string>& values) {
  w.Key(key);
  w.Strings(values);
}

void WriteJsonError(json::Writer& w, const Status& status) {
  w.BeginObject();
  w.Key("code");
  w.String(CodeName(status.code()));
  w.Key("record");
  w.String(status.record());
  w.Key("offset");
  if (status.offset() == kNoOffset) w.Null();
  else w.Uint(status.offset());
  w.Key("message");
  w.String(status.message());
  w.Key("path");
  if (status.path().empty()) w.Null();
  else w.String(status.path());
  w.EndObject();
}

void JsonFiles::AddError(const std::string& path, const Status& status) {
  w_.BeginObject();
  w_.Key("path");
  w_.String(path);
  w_.Key("error");
  WriteJsonError(w_, status);
  w_.EndObject();
}

void JsonFiles::Add(const model::Listing& l) {
  json::Writer& w = w_;
  w.BeginObject();
  w.Key("path");
  w.String(l.path);
  w.Key("format");
  w.String(model::FileFormatName(l.format));
  w.Key("tensors");
  w.BeginArray();
  for (const model::TensorInfo& t : l.tensors) {
    w.BeginObject();
    w.Key("name");
    w.String(t.name);
    w.Key("path");
    WritePath(w, t.path);
    w.Key("dtype");
    w.String(t.dtype);
    w.Key("shape");
    WriteInts(w, t.shape);
    w.Key("stride");
    WriteInts(w, t.stride);
    w.Key("storage");
    w.String(t.storage);
    w.Key("offset");
    w.Int(t.offset);
    w.Key("nbytes");
    w.Uint(t.nbytes);
    if (t.quantized) {
      w.Key("quantized");
      w.Bool(true);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("storages");
  w.BeginArray();
  for (const model::StorageInfo& s : l.storages) {
    w.BeginObject();
    w.Key("key");
    w.String(s.key);
    w.Key("dtype");
    w.String(s.dtype);
    w.Key("nbytes");
    w.Uint(s.nbytes);
    w.Key("referenced_nbytes");
    w.Uint(s.referenced_nbytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("stored_bytes");
  w.Uint(l.stored_bytes);
  w.Key("referenced_bytes");
  w.Uint(l.referenced_bytes);
  w.Key("tied");
  w.BeginArray();
  for (const auto& group : l.tied) {
    w.Strings(group);
  }
  w.EndArray();
  WriteUnsafeGlobals(w, l.unsafe_globals);
  w.Key("deflated_records");
  w.Uint(l.deflated_records);
  w.Key("crc32_unrecorded_records");
  w.Uint(l.crc_unrecorded_records);
  w.EndObject();
}

Result<std::string> JsonFiles::Finish() {
  w_.EndArray();
  if (!folders_.empty()) {
    w_.Key("folders");
    w_.BeginArray();
    for (const FolderTotal& f : folders_) {
      w_.BeginObject();
      w_.Key("path");
      w_.String(f.path);
      w_.Key("files");
      w_.Uint(f.files);
      w_.Key("file_bytes");
      w_.Uint(f.file_bytes);
      w_.Key("stored_bytes");
      w_.Uint(f.stored_bytes);
      w_.Key("referenced_bytes");
      w_.Uint(f.referenced_bytes);
      w_.Key("shrunk_file_bytes");
      if (f.shrunk_file_bytes) w_.Uint(*f.shrunk_file_bytes);
      else w_.Null();
      w_.Key("shrink_saves_bytes");
      if (f.shrunk_file_bytes) w_.Uint(f.file_bytes - std::min(f.file_bytes, *f.shrunk_file_bytes));
      else w_.Null();
      WriteStringArray(w_, "unread", f.unread);
      w_.EndObject();
    }
    w_.EndArray();
  }
  w_.EndObject();
  ZF_ASSIGN_OR_RETURN(std::string out, w_.Finish());
  return out + "\n";
}

}  // namespace zerofold::model
