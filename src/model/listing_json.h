// The `inspect --json` document: {"files":[...]}, assembled by
// inspect::ReportJson (inspect/json.h) for the CLI and zf_inspect_json.
// Field names are part of the interface (README.md): append only.
#ifndef ZEROFOLD_MODEL_LISTING_JSON_H_
#define ZEROFOLD_MODEL_LISTING_JSON_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "json/writer.h"
#include "model/listing.h"
#include "zerofold/status.h"

namespace zerofold::model {

// The writer of every --json document. Text from files that is not valid
// UTF-8 (a corrupt entry name, a pickle string) is written with each bad
// byte as \xNN (json::WriteOptions::escape_invalid_utf8), so a document
// always parses and never drops what it reports.
json::Writer NewJsonWriter();

// The two keys every --json document that lists unsafe globals writes:
// "unsafe_globals" (["module.name", ...] as the pickle names them, the form
// consumers have always read) and "unsafe_reasons" ({"module.name": reason},
// pickle::UnsafeReason: "runs code: <group>" or "not on an allowlist").
void WriteUnsafeGlobals(json::Writer& w, const std::vector<std::string>& globals);

class JsonFiles {
 public:
  JsonFiles();
  void Add(const model::Listing& listing);
  // A file that could not be read: {"path":..., "error":{code, record, offset, message}}.
  void AddError(const std::string& path, const Status& status);
  // A folder's total, written after "files" as an element of "folders":
  // {"path", "files", "file_bytes", "stored_bytes", "referenced_bytes",
  // "shrunk_file_bytes" (null when unset), "shrink_saves_bytes" (null
  // likewise), "unread"}. The document has "folders" only when one was added.
  void AddFolder(const FolderTotal& total) { folders_.push_back(total); }
  // An element written by `write` (one JSON object), for listings of other
  // stages (a Distributed Checkpoint folder: dcp/listing.h; a Megatron
  // checkpoint: megatron/inspect.h; a DeepSpeed folder: inspect/json.cc).
  void AddWith(const std::function<void(json::Writer&)>& write) { write(w_); }
  // The whole document, with a trailing newline; an error only for a
  // zerofold bug (writer misuse).
  Result<std::string> Finish();

 private:
  json::Writer w_;
  std::vector<FolderTotal> folders_;
};

// Writes "key": [strings...] in an object.
void WriteStringArray(json::Writer& w, std::string_view key, const std::vector<std::string>& values);

// Writes {"code":..., "record":..., "offset":..., "message":..., "path":...}:
// every JSON error object has these keys; offset and path are null when
// unknown.
void WriteJsonError(json::Writer& w, const Status& status);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_LISTING_JSON_H_
