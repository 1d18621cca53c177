// Zip reader, one forward pass (src/zip/stream_reader.h), over a pipe of an
// in-memory Env: entries alternately read whole (finding the end by the data
// descriptor when the size is unknown), read in chunks after declaring a
// size the header states, or skipped; then the central directory checked.
// An archive read to its end from a pipe must read by path too (zip/archive.h),
// with the same entries at the same offsets (each entry located: its local
// header read and checked as opening it by path does).
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt fixtures/bad/*.pt fuzz/seeds/regressions/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_input.h"
#include "zip/archive.h"
#include "zip/stream_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<StreamSource> src = file.Stream();
  zip::StreamReader reader(src.get());
  std::vector<zip::StreamEntry> seen;
  for (size_t i = 0;; ++i) {
    Result<const zip::StreamEntry*> e = reader.Next();
    if (!e.ok()) return 0;
    if (*e == nullptr) break;
    seen.push_back(**e);
    if (i % 3 == 0) {
      if (!reader.ReadAll(fuzz::kMaxRecordBytes).ok()) return 0;
    } else if (i % 3 == 1 && (*e)->size_known) {
      if (!fuzz::ReadToEnd(reader)) return 0;
    }
  }
  if (!reader.Finish().ok()) return 0;
  std::unique_ptr<RandomSource> random = file.Random();
  Result<zip::Archive> archive = zip::ReadArchive(*random);
  if (!archive.ok() || archive->entries.size() != seen.size()) abort();
  for (size_t i = 0; i < seen.size(); ++i) {
    Result<zip::Entry> e = zip::LocateEntry(*random, archive->entries[i]);
    if (!e.ok() || e->name != seen[i].name || e->header_offset != seen[i].header_offset ||
        e->data_offset != seen[i].data_offset)
      abort();
  }
  return 0;
}
