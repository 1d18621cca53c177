#include "model/listing.h"

#include <algorithm>
#include <string>

namespace zerofold::model {

std::string_view FileFormatName(FileFormat format) {
  switch (format) {
    case FileFormat::kTorchZip: return "torch-zip";
    case FileFormat::kTorchLegacy: return "torch-legacy";
    case FileFormat::kSafetensors: return "safetensors";
  }
  return "unknown";
}

Listing ListCheckpoint(const torch::Checkpoint& ckpt, const std::string& path) {
  Listing out;
  out.path = path;
  out.format = ckpt.format == torch::Format::kTorchZip ? FileFormat::kTorchZip : FileFormat::kTorchLegacy;
  out.unsafe_globals = ckpt.unsafe_globals;

  struct Extent {
    torch::ByteRange range;
    size_t tensor;
  };
  std::vector<std::vector<Extent>> extents(ckpt.storages.size());
  for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
    const torch::Tensor& t = ckpt.tensors[i];
    TensorInfo info;
    info.name = t.name;
    info.path = t.path;
    info.dtype = t.dtype;
    info.shape = t.shape;
    info.stride = t.stride;
    info.storage = ckpt.storages[t.storage].key;
    info.offset = t.storage_offset;
    info.nbytes = t.nbytes();
    info.quantized = t.quantized;
    out.tensors.push_back(std::move(info));
    // The reader has validated every extent; an error here cannot happen.
    Result<torch::ByteRange> r = torch::ViewExtent(t);
    if (r.ok() && r->end > r->begin) extents[t.storage].push_back({*r, i});
  }

  for (size_t s = 0; s < ckpt.storages.size(); ++s) {
    const torch::Storage& storage = ckpt.storages[s];
    std::vector<Extent>& ext = extents[s];
    std::sort(ext.begin(), ext.end(), [](const Extent& a, const Extent& b) {
      return a.range.begin != b.range.begin ? a.range.begin < b.range.begin : a.tensor < b.tensor;
    });
    uint64_t referenced = 0, cur_end = 0;
    std::vector<std::string> group;
    auto flush_group = [&]() {
      std::vector<std::string> names = group;
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      if (names.size() > 1) out.tied.push_back(group);
      group.clear();
    };
    for (const Extent& e : ext) {
      if (e.range.begin >= cur_end) flush_group();
      group.push_back(ckpt.tensors[e.tensor].name);
      uint64_t b = std::max(e.range.begin, cur_end);
      if (e.range.end > b) referenced += e.range.end - b;
      cur_end = std::max(cur_end, e.range.end);
    }
    flush_group();
    out.storages.push_back({storage.key, storage.dtype, storage.nbytes, referenced});
    out.stored_bytes += storage.nbytes;
    out.referenced_bytes += referenced;
  }
  return out;
}

}  // namespace zerofold::model
