// The zstd stream wrapper (src/io/zstd_stream.h): frames, skippable frames
// and what lies between them, decompressed from a pipe of an in-memory Env
// with a 1 MiB window limit, to the end or the first error.
// fuzz-seeds: fuzz/seeds/zstd_source/*
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "io/zstd_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  io::ZstdOptions options;
  options.window_log_max = 20;
  Result<std::unique_ptr<io::ZstdSource>> src = io::ZstdSource::Open(file.Stream(), options);
  if (!src.ok()) return 0;
  // A few bytes can stand for gigabytes: stop after 16 MiB.
  fuzz::ReadToEnd(**src, 16 * fuzz::kMaxRecordBytes);
  return 0;
}
