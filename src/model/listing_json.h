// The `inspect --json` document: {"files":[...]}, written by the CLI and by
// zf_inspect_json. Field names are part of the interface (README.md): append
// only.
#ifndef ZEROFOLD_MODEL_LISTING_JSON_H_
#define ZEROFOLD_MODEL_LISTING_JSON_H_

#include <string>

#include "json/writer.h"
#include "model/listing.h"
#include "zerofold/status.h"

namespace zerofold::model {

// The writer of every --json document. Text from files that is not valid
// UTF-8 (a corrupt entry name, a pickle string) is written with each bad
// byte as \xNN (json::WriteOptions::escape_invalid_utf8), so a document
// always parses and never drops what it reports.
json::Writer NewJsonWriter();

class JsonFiles {
 public:
  JsonFiles();
  void Add(const model::Listing& listing);
  // An entry `fill` writes whole (one JSON object), e.g. a DeepSpeed folder.
  template <typename Fill>
  void AddObject(Fill fill) { fill(w_); }
  // A file that could not be read: {"path":..., "error":{code, record, offset, message}}.
  void AddError(const std::string& path, const Status& status);
  // The whole document, with a trailing newline; an error only for a
  // zerofold bug (writer misuse).
  Result<std::string> Finish();

 private:
  json::Writer w_;
};

// Writes {"code":..., "record":..., "offset":..., "message":...}.
void WriteJsonError(json::Writer& w, const Status& status);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_LISTING_JSON_H_
