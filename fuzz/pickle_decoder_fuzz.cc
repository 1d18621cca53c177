// Pickle decoder (src/pickle/decoder.h). A pickle that decodes and that the
// encoder accepts must encode to a pickle that decodes again.
// fuzz-seeds: fixtures/pickle/*/*.pkl
// fuzz-seeds-pickle: fixtures/torch/*.pt fixtures/bad/unsafe_*.pt
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_input.h"
#include "pickle/decoder.h"
#include "pickle/encoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<pickle::Decoded> d = pickle::Decode(fuzz::Bytes(data, size), 0);
  if (!d.ok()) return 0;
  Result<std::vector<std::byte>> again = pickle::Encode(d->graph, d->root);
  if (!again.ok()) return 0;
  if (!pickle::Decode(*again, 0).ok()) abort();
  return 0;
}
