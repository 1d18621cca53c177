// Legacy torch reader (src/torch/legacy.h): the five pickles, the storage
// key list and each storage's count, over a file of an in-memory Env; then
// the views checked against the storages, as ReadCheckpoint does.
// fuzz-seeds: fixtures/torch/legacy_*.pt
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "torch/checkpoint.h"
#include "torch/legacy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  std::unique_ptr<RandomSource> src = file.Random();
  Result<torch::Checkpoint> ckpt = torch::ReadLegacyCheckpoint(*src, fuzz::TorchOptions());
  if (!ckpt.ok()) return 0;
  torch::CheckViews(*ckpt).IgnoreError();
  return 0;
}
