// Torch output into a folder in transformers' layout: pytorch_model.bin, or
// past ConvertOptions::max_shard_bytes HF shards
// pytorch_model-0000K-of-0000N.bin with pytorch_model.bin.index.json.
//
// Shards follow output/sharding.h: names in checkpoint order fill shards
// greedily by the bytes of their storage clusters; names whose bytes
// overlap (ties) go together, into the shard of the first, and share one
// storage there; each shard holds exactly its own tensors' bytes (shrunk as
// plan/shrink_plan.h shrinks, cast as rewrite/cast.h casts). Each shard is a
// dict {name: tensor} in checkpoint order, as transformers saves shards;
// Parameters stay Parameters. Non-tensor values cannot go into HF shards:
// they are named in a warning. When everything fits one file, that file
// is pytorch_model.bin holding the whole checkpoint, as ShrinkFile writes it.
#ifndef ZEROFOLD_REWRITE_TORCH_SHARDS_H_
#define ZEROFOLD_REWRITE_TORCH_SHARDS_H_

#include <string>

#include "rewrite/convert.h"

namespace zerofold::rewrite {

// Writes the torch file `input` into the folder `output` (created if
// needed) as described above; every file atomically, the index last, then
// stale files of an earlier save in `output` are removed. With
// options.part (ConvertOptions::part), every file is planned first (exact
// size) and a part writes only its own, finish the index and the removals.
// Errors as ShrinkFile's (kUnsafe for unsafe globals without keep_unsafe).
Result<ConvertReport> ShardTorchFile(Env* env, const std::string& input, const std::string& output,
                                     const ConvertOptions& options);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_TORCH_SHARDS_H_
