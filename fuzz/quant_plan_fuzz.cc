// The dequantize planner (src/quant/scheme.h): a safetensors file's tensors
// (the values of weight_shape / weight_g_idx read from the file, as
// convert --dequantize reads them) paired into quantized groups, with the
// quantization_config taken from the header's __metadata__ when it holds
// one (else the names decide, as for a file given alone). Property: every
// group names tensors of the input, and decodes a matrix of exactly its
// output's elements.
// fuzz-seeds: fixtures/quant/*/in/*.safetensors fuzz/seeds/safetensors_reader/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "json/reader.h"
#include "quant/elements.h"
#include "quant/scheme.h"
#include "safetensors/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  const std::span<const std::byte> bytes = fuzz::Bytes(data, size);
  Result<safetensors::File> file = safetensors::ParseFile(bytes);
  if (!file.ok()) return 0;
  std::optional<json::Value> config;
  if (std::optional<std::string_view> text = file->FindMetadata("quantization_config")) {
    Result<json::Value> parsed = json::Parse(*text);
    if (!parsed.ok()) return 0;
    config = std::move(*parsed);
  }
  std::vector<quant::SourceTensor> tensors;
  for (const safetensors::TensorInfo& info : file->tensors) {
    quant::SourceTensor t{info.name, info.dtype, info.shape, 0, info.data_offset, info.byte_size(), {}};
    if (quant::NeedsValues(t)) {
      std::optional<size_t> item = quant::ScaleItemSize(t.dtype);
      if (!item || t.offset > bytes.size() || t.bytes > bytes.size() - t.offset) return 0;
      for (uint64_t i = 0; i < t.bytes / *item; ++i)
        t.values.push_back(quant::IntegerAt(t.dtype, bytes.subspan(t.offset, t.bytes), i));
    }
    tensors.push_back(std::move(t));
  }
  const std::vector<std::string> files = {"fuzz.safetensors"};
  Result<quant::Plan> plan = quant::PlanDequantize(config ? &*config : nullptr, tensors, files);
  if (!plan.ok()) return 0;
  for (const quant::Group& g : plan->groups) {
    if (g.weight >= tensors.size() || g.scale >= tensors.size()) abort();
    for (uint32_t m : g.members)
      if (m >= tensors.size()) abort();
    if (g.zero_point && *g.zero_point >= tensors.size()) abort();
    if (g.global_scale && *g.global_scale >= tensors.size()) abort();
    uint64_t numel = 1;
    bool overflow = false;
    for (uint64_t d : g.shape) overflow |= __builtin_mul_overflow(numel, d, &numel);
    uint64_t cells = 0;
    overflow |= __builtin_mul_overflow(g.rows, g.cols, &cells);
    if (!overflow && numel != cells) abort();
  }
  for (const quant::Plan::Item& item : plan->items)
    if (item.group ? item.index >= plan->groups.size() : item.index >= tensors.size()) abort();
  return 0;
}
