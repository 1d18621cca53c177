// safetensors reader (src/safetensors/reader.h): the whole file in memory,
// and the header from a pipe. A file that validates must validate from a
// pipe too, with the same tensors, each found by its name.
// fuzz-seeds: fuzz/seeds/safetensors_reader/*
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "safetensors/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  Result<safetensors::File> whole = safetensors::ParseFile(fuzz::Bytes(data, size));
  fuzz::InputFile file(data, size);
  std::unique_ptr<StreamSource> src = file.Stream();
  Result<safetensors::File> streamed = safetensors::ReadHeader(*src);
  if (!whole.ok()) return 0;
  if (!streamed.ok() || streamed->tensors.size() != whole->tensors.size()) abort();
  for (size_t i = 0; i < whole->tensors.size(); ++i) {
    const safetensors::TensorInfo& t = whole->tensors[i];
    if (whole->Find(t.name) != &t) abort();
    if (streamed->tensors[i].data_offset != t.data_offset || streamed->tensors[i].end != t.end) abort();
  }
  for (const auto& [key, value] : whole->metadata) {
    if (!whole->FindMetadata(key)) abort();
  }
  return 0;
}
