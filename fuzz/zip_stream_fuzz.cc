// Zip reader, one forward pass (src/zip/stream_reader.h), over a pipe of an
// in-memory Env: entries alternately read whole (finding the end by the data
// descriptor when the size is unknown), read in chunks after declaring a
// size the header states, or skipped; then the central directory checked.
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt fixtures/bad/*.pt
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "zip/stream_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<StreamSource> src = file.Stream();
  zip::StreamReader reader(src.get());
  for (size_t i = 0;; ++i) {
    Result<const zip::StreamEntry*> e = reader.Next();
    if (!e.ok()) return 0;
    if (*e == nullptr) break;
    if (i % 3 == 0) {
      if (!reader.ReadAll(fuzz::kMaxRecordBytes).ok()) return 0;
    } else if (i % 3 == 1 && (*e)->size_known) {
      if (!fuzz::ReadToEnd(reader)) return 0;
    }
  }
  reader.Finish().IgnoreError();
  return 0;
}
