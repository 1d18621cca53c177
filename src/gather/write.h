// Writing one output file of a merge: a torch zip archive holding a state
// dict (merge/pickle.h) or a safetensors file, whose tensor bytes come
// from a TensorAssembler as the writer asks for them. Plans are computed
// first (exact file sizes, for --dry-run and shard reports); writing streams.
#ifndef ZEROFOLD_GATHER_WRITE_H_
#define ZEROFOLD_GATHER_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gather/assemble.h"
#include "gather/layout.h"
#include "gather/plan.h"
#include "safetensors/writer.h"
#include "torch/state_dict.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::gather {

// Called with the bytes of each chunk written.
using WriteProgress = std::function<void(uint64_t bytes)>;

// The top folder torch.save gives an archive written to `path`: the file
// name without its last extension ("model.v2" for "out/model.v2.bin"; "" for
// ".bin"), as PyTorchStreamWriter's basename() in
// caffe2/serialize/inline_container.cc cuts it.
std::string ArchiveStem(std::string_view path);

// A torch file of some layout entries: its pickle and storages.
struct TorchFilePlan {
  std::string top_folder;          // the output file's stem
  torch::StateDictPickle pickle;
  std::vector<size_t> storage_tensor;  // per storage: the plan tensor it holds
  uint64_t file_bytes = 0;         // exact archive size
};

// `entries` index layout.entries, in file order. A tie whose owner is not
// among them holds its own copy. Errors: those of EncodeStateDict.
Result<TorchFilePlan> PlanTorchFile(const GatherPlan& plan, const MergeLayout& layout,
                                    std::span<const size_t> entries, const std::string& path);

// Streams the archive into sink (not committed).
Status WriteTorchFile(const TorchFilePlan& file, const GatherPlan& plan, TensorAssembler& assembler,
                      Sink* sink, const WriteProgress& progress);

// A safetensors file of some layout entries: every name gets its own copy
// (ties included), in the reference writer's order; __metadata__ is
// {"format": "pt"}, as transformers writes torch weights.
struct SafetensorsFilePlan {
  safetensors::Layout layout;
  std::vector<size_t> tensor_of;  // per layout.tensors item (file order): the plan tensor
};

// kUnsupported for a dtype safetensors has no code for; errors of PlanFile.
Result<SafetensorsFilePlan> PlanSafetensorsFile(const GatherPlan& plan, const MergeLayout& layout,
                                                std::span<const size_t> entries);

Status WriteSafetensorsFile(const SafetensorsFilePlan& file, const GatherPlan& plan,
                            TensorAssembler& assembler, Sink* sink, const WriteProgress& progress);

}  // namespace zerofold::gather

#endif  // ZEROFOLD_GATHER_WRITE_H_
