// The checkpoint model over a decoded pickle (src/torch/tensor_recognizer.h):
// storages and tensor views recognized in the graph, each view's extent
// checked against its storage (CheckViews, with every storage as large as it
// declares), then the shrink plan built from the model.
// fuzz-seeds-pickle: fixtures/torch/*.pt fixtures/hf/bloated/*.bin fixtures/deepspeed/*/ckpt/*/*.pt
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "pickle/decoder.h"
#include "plan/shrink_plan.h"
#include "torch/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<pickle::Decoded> d = pickle::Decode(fuzz::Bytes(data, size), 0);
  if (!d.ok()) return 0;
  Result<torch::Checkpoint> ckpt = fuzz::ModelOf(std::move(*d));
  if (!ckpt.ok()) return 0;
  for (torch::Storage& s : ckpt->storages) s.record_size = s.nbytes;
  if (!torch::CheckViews(*ckpt).ok()) return 0;
  plan::PlanShrink(*ckpt).status().IgnoreError();
  return 0;
}
