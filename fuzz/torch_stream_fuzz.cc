// A torch file in one forward pass (torch/stream_checkpoint.h): the model
// from the pipe, then every storage's bytes, then the rest of the archive
// checked, over a pipe of an in-memory Env. A file read to its end from a
// pipe must read by path too (ReadCheckpoint), with the same tensors and
// storages.
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt fuzz/seeds/regressions/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "fuzz_input.h"
#include "torch/checkpoint.h"
#include "torch/read.h"
#include "torch/stream_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<StreamSource> src = file.Stream();
  torch::StreamCheckpointReader reader(src.get(), fuzz::TorchOptions());
  if (!reader.ReadModel().ok()) return 0;
  while (true) {
    Result<std::optional<uint32_t>> s = reader.NextStorage();
    if (!s.ok()) return 0;
    if (!*s) break;
    if (!fuzz::ReadToEnd(reader)) return 0;
  }
  if (!reader.Finish().ok()) return 0;
  std::unique_ptr<RandomSource> random = file.Random();
  Result<torch::Checkpoint> by_path = torch::ReadCheckpoint(*random, fuzz::TorchOptions());
  const torch::Checkpoint& streamed = reader.checkpoint();
  if (!by_path.ok() || by_path->tensors.size() != streamed.tensors.size() ||
      by_path->storages.size() != streamed.storages.size())
    abort();
  for (size_t i = 0; i < streamed.tensors.size(); ++i) {
    if (by_path->tensors[i].name != streamed.tensors[i].name) abort();
  }
  for (size_t i = 0; i < streamed.storages.size(); ++i) {
    const torch::Storage& a = by_path->storages[i];
    const torch::Storage& b = streamed.storages[i];
    if (a.key != b.key || a.nbytes != b.nbytes || a.data_offset != b.data_offset) abort();
  }
  return 0;
}
