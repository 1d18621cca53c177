#include "zero/gather_plan.h"

#include <utility>
#include <vector>

#include "io/checked_math.h"

namespace zerofold::zero {

Result<gather::GatherPlan> ToGatherPlan(const zero::MergePlan& plan, const LoadedZero& loaded) {
  gather::GatherPlan out;
  for (const ZeroFile& f : loaded.model_files) out.sources.push_back({f.path, f.source.get()});
  for (const ZeroFile& f : loaded.optim_files) out.sources.push_back({f.path, f.source.get()});
  for (const ZeroFile& f : loaded.param_files) out.sources.push_back({f.path, f.source.get()});
  const uint32_t optim_base = static_cast<uint32_t>(loaded.model_files.size());
  const uint32_t param_base = optim_base + static_cast<uint32_t>(loaded.optim_files.size());
  for (const zero::OutputTensor& t : plan.tensors) {
    gather::GatherTensor g;
    g.name = t.name;
    g.dtype = t.dtype;
    g.shape = t.shape;
    g.grid = {static_cast<int64_t>(gather::NumelOf(t.shape))};
    uint64_t element = 0;
    for (const zero::SourceSlice& slice : t.slices) {
      const ZeroFile& file = loaded.FileOf(slice);
      auto found = file.storages.find(slice.storage);
      if (found == file.storages.end())
        return Status::Corrupt(t.name + " needs storage " + slice.storage + ", which the file does not hold")
            .WithPath(file.path);
      const StorageLocation& where = found->second;
      const uint32_t itemsize = torch::Info(slice.dtype).itemsize;
      std::optional<uint64_t> end = io::CheckedAdd<uint64_t>(slice.offset, slice.count);
      if (!end || *end > where.nbytes / itemsize)
        return Status::Corrupt(t.name + " needs elements " + std::to_string(slice.offset) + " to " +
                               std::to_string(slice.offset) + "+" + std::to_string(slice.count) + " of storage " +
                               slice.storage + ", which holds " + std::to_string(where.nbytes / itemsize) +
                               " elements")
            .WithPath(file.path)
            .WithRecord(where.record);
      gather::Piece p;
      p.offsets = {static_cast<int64_t>(element)};
      p.sizes = {static_cast<int64_t>(slice.count)};
      switch (slice.source) {
        case zero::SourceKind::kModelStates: p.file = slice.file; break;
        case zero::SourceKind::kOptimStates: p.file = optim_base + slice.file; break;
        case zero::SourceKind::kParamFile: p.file = param_base + slice.file; break;
      }
      p.dtype = slice.dtype;
      gather::PlaceInStorage(where, 0, &p);
      p.view_offset = static_cast<int64_t>(slice.offset);
      p.strides = {1};
      g.pieces.push_back(std::move(p));
      element += slice.count;
    }
    out.tensors.push_back(std::move(g));
  }
  for (const zero::Tie& t : plan.ties) out.ties.push_back({t.name, t.owner});
  return out;
}

Result<gather::MergeLayout> LayOutMerge(const zero::MergePlan& plan, const zero::ZeroCheckpoint& ckpt,
                                       std::span<const std::string> only) {
  std::vector<std::string> names;
  for (const zero::OutputTensor& t : plan.tensors) names.push_back(t.name);
  std::vector<gather::Tie> ties;
  for (const zero::Tie& t : plan.ties) ties.push_back({t.name, t.owner});
  std::vector<std::string> order;
  if (!ckpt.model_states.empty())
    for (const zero::NamedTensor& m : ckpt.model_states[0].module) order.push_back(m.name);
  return gather::LayOut(names, ties, order, only);
}

}  // namespace zerofold::zero
