// Zip reader, central directory path (src/zip/archive.h), over a file of an
// in-memory Env: the end records, the central directory, every local
// header, then each entry read whole (CRC-32 checked). Every entry the
// reader lists must be found by its name.
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt fixtures/bad/*.pt
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "zip/archive.h"
#include "zip/entry_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<RandomSource> src = file.Random();
  Result<zip::Archive> archive = zip::ReadArchive(*src);
  if (!archive.ok()) return 0;
  for (const zip::Entry& e : archive->entries) {
    if (archive->FindFullName(e.name) != &e) abort();
    zip::ReadEntry(*src, e, fuzz::kMaxRecordBytes).status().IgnoreError();
  }
  return 0;
}
