// A torch file in one forward pass (torch/stream_checkpoint.h): the model
// from the pipe, then every storage's bytes, then the rest of the archive
// checked, over a pipe of an in-memory Env.
// fuzz-seeds: fixtures/torch/*.pt fixtures/zip/*.pt
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_input.h"
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
  reader.Finish().IgnoreError();
  return 0;
}
