// What `inspect --json` does with one file (src/model/listing.h): the
// format sniffed, the file listed (torch zip, legacy or safetensors), and
// the listing or the error written as the JSON document. The document must
// always be written and parse as JSON (model/listing_json.h).
// fuzz-seeds: fixtures/torch/*.pt fixtures/bad/*.pt fuzz/seeds/safetensors_reader/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_input.h"
#include "json/reader.h"
#include "model/listing.h"
#include "model/listing_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  model::ListOptions options;
  options.torch = fuzz::TorchOptions();
  Result<model::Listing> listing = model::ListFile(file.env(), file.path(), options);
  model::JsonFiles doc;
  if (listing.ok()) {
    doc.Add(*listing);
  } else {
    doc.AddError(file.path(), listing.status());
  }
  Result<std::string> text = doc.Finish();
  if (!text.ok() || !json::Parse(*text).ok()) abort();
  return 0;
}
