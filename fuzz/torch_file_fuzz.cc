// A torch file by path (torch/checkpoint.h ReadCheckpoint): the format
// sniffed, the zip archive's data.pkl or the legacy pickles decoded, tensors
// recognized, storages located and views checked, over a file of an
// in-memory Env.
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt fixtures/bad/*.pt
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "torch/checkpoint.h"
#include "torch/read.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<RandomSource> src = file.Random();
  torch::ReadCheckpoint(*src, fuzz::TorchOptions()).status().IgnoreError();
  return 0;
}
