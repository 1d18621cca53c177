// Inflate (src/zip/inflate.h) on a raw deflate stream, handed over in
// spans of 1 to 8 bytes so every input boundary is crossed. Properties: the
// output never passes its bound; a stream that decodes under a limit
// decodes again, to the same bytes, when that size is declared, and is
// refused when one more byte is declared.
// fuzz-seeds: fixtures/zip/deflate/*.deflate
// fuzz-seeds-deflated: fixtures/bad/*.pt fixtures/zip/deflate/*.pt
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <vector>

#include "fuzz_input.h"
#include "zip/inflate.h"

namespace {

// Hands out the input in spans whose sizes cycle through 1..8 bytes.
class SpanInput : public zerofold::zip::InflateInput {
 public:
  explicit SpanInput(std::span<const std::byte> bytes) : bytes_(bytes) {}
  zerofold::Result<std::span<const std::byte>> Next() override {
    const size_t n = std::min(bytes_.size() - pos_, step_ % 8 + 1);
    ++step_;
    std::span<const std::byte> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
  size_t step_ = 0;
};

// Decodes all of `bytes` under `bound`; nullopt on any error.
std::optional<std::vector<std::byte>> Decode(std::span<const std::byte> bytes, zerofold::zip::InflateBound bound) {
  SpanInput input(bytes);
  zerofold::zip::Inflater inflater(&input, 0, bound);
  std::vector<std::byte> out;
  std::byte chunk[4096];
  for (;;) {
    zerofold::Result<size_t> got = inflater.Read(chunk);
    if (!got.ok()) return std::nullopt;
    if (*got == 0) break;
    out.insert(out.end(), chunk, chunk + *got);
    if (out.size() > bound.bytes) abort();  // the bound is never passed
  }
  if (!inflater.finished()) abort();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  const std::span<const std::byte> bytes = fuzz::Bytes(data, size);
  std::optional<std::vector<std::byte>> limited = Decode(bytes, {fuzz::kMaxRecordBytes, false});
  if (!limited) return 0;
  std::optional<std::vector<std::byte>> declared = Decode(bytes, {limited->size(), true});
  if (!declared || *declared != *limited) abort();
  if (Decode(bytes, {limited->size() + 1, true})) abort();
  return 0;
}
