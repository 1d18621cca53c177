// The Hugging Face sharded-checkpoint index (src/model/hf_folder.h,
// `*.index.json`). An index that reads must write back (FormatShardIndex)
// to an index that reads to the same total size, metadata and weight map.
// fuzz-seeds: fixtures/hf/bloated/*.index.json fixtures/deepspeed/*/*.index.json fuzz/seeds/json_reader/index.json
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_input.h"
#include "model/hf_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerofold;
  fuzz::InputFile file(data, size);
  Result<model::ShardIndex> index = model::ReadShardIndex(file.env(), file.path());
  if (!index.ok()) return 0;
  file.env()->SetFile("again", model::FormatShardIndex(*index));
  Result<model::ShardIndex> again = model::ReadShardIndex(file.env(), "again");
  if (!again.ok() || again->total_size != index->total_size || again->metadata != index->metadata ||
      again->weight_map != index->weight_map)
    abort();
  return 0;
}
