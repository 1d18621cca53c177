// The DeepSpeed layout reader (src/zero/extract.h). The input is a sequence
// of pickles, the data.pkl records of one checkpoint's files: each is read
// as a model-states file if it reads as one, else as the optim states of the
// next rank; when both kinds were read, the merge is planned (src/zero/plan.h).
// fuzz-seeds-pickle: fixtures/deepspeed/*/ckpt/*/*.pt
// fuzz-seeds-pickles: fixtures/deepspeed/*/ckpt/*
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "pickle/decoder.h"
#include "torch/checkpoint.h"
#include "zero/extract.h"
#include "zero/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  std::span<const std::byte> rest = fuzz::Bytes(data, size);
  zero::ZeroCheckpoint zc;
  for (int file = 0; !rest.empty() && file < 16; ++file) {
    Result<pickle::Decoded> d = pickle::Decode(rest, size - rest.size());
    if (!d.ok()) return 0;
    rest = rest.subspan(d->consumed);
    Result<torch::Checkpoint> ckpt = fuzz::ModelOf(std::move(*d));
    if (!ckpt.ok()) return 0;
    Result<zero::ModelStates> model = zero::ExtractModelStates(*ckpt, "model_states.pt");
    if (model.ok()) {
      zc.model_states.push_back(std::move(*model));
      continue;
    }
    const uint32_t rank = static_cast<uint32_t>(zc.optim_states.size());
    Result<zero::OptimStates> optim =
        zero::ExtractOptimStates(*ckpt, "rank_" + std::to_string(rank) + "_optim_states.pt", rank);
    if (!optim.ok()) return 0;
    zc.optim_states.push_back(std::move(*optim));
  }
  if (zc.model_states.empty() || zc.optim_states.empty()) return 0;
  zero::PlanMerge(zc).status().IgnoreError();
  return 0;
}
