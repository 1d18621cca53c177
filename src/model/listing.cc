#include "model/listing.h"

#include "io/cursor.h"
#include "safetensors/dtype.h"
#include "safetensors/reader.h"
#include "torch/read.h"

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
  out.zip_records = ckpt.zip_records;
  out.deflated_records = ckpt.deflated_records;
  out.big_endian = ckpt.big_endian;
  out.crc_unrecorded_records = ckpt.crc_unrecorded_records;

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
    info.dtype = std::string(torch::Info(t.dtype).name);
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
    out.storages.push_back({storage.key, std::string(torch::Info(storage.dtype).name), storage.nbytes, referenced});
    out.stored_bytes += storage.nbytes;
    out.referenced_bytes += referenced;
  }
  return out;
}

}  // namespace zerofold::model

namespace zerofold::model {

Result<FileFormat> SniffFormat(const RandomSource& src) {
  std::byte head[16] = {};
  ZF_ASSIGN_OR_RETURN(size_t n, src.ReadAt(0, head));
  if (n >= 9) {
    uint64_t header_len = io::DecodeU64le(head);
    size_t i = 8;
    while (i < n && (head[i] == std::byte(' ') || head[i] == std::byte('\t') || head[i] == std::byte('\n') ||
                     head[i] == std::byte('\r')))
      ++i;
    if (i < n && head[i] == std::byte('{') && header_len > 0 && header_len <= src.size() - 8)
      return FileFormat::kSafetensors;
  }
  const bool zip = n >= 4 && head[0] == std::byte('P') && head[1] == std::byte('K');
  if (zip) return FileFormat::kTorchZip;
  // pickletools: PROTO 2, then LONG1 of 10 bytes, as the legacy magic number starts.
  const bool legacy = n >= 4 && head[0] == std::byte{0x80} && head[1] == std::byte{0x02} &&
                      head[2] == std::byte{0x8a} && head[3] == std::byte{0x0a};
  const std::string_view name = src.name();
  constexpr std::string_view kSafetensorsExtension = ".safetensors";
  if (!legacy && name.size() >= kSafetensorsExtension.size() &&
      name.substr(name.size() - kSafetensorsExtension.size()) == kSafetensorsExtension)
    return FileFormat::kSafetensors;  // named so and no torch file: the safetensors reader says what is wrong
  return FileFormat::kTorchLegacy;
}

namespace {

Listing ListSafetensors(const safetensors::File& file, const std::string& path) {
  Listing out;
  out.path = path;
  out.format = FileFormat::kSafetensors;
  for (const safetensors::TensorInfo& t : file.tensors) {
    TensorInfo info;
    info.name = t.name;
    info.path.push_back({torch::PathElem::Type::kStrKey, t.name, 0});
    std::optional<torch::DType> td = t.torch_dtype;
    info.dtype = td ? std::string(torch::Info(*td).name) : std::string(safetensors::DtypeCode(t.dtype));
    int64_t stride = 1;
    // torch's reading where it has one (F4 as float4_e2m1fn_x2 pairs), else the header's.
    if (td) info.shape = t.torch_shape;
    else info.shape.assign(t.shape.begin(), t.shape.end());
    info.stride.assign(info.shape.size(), 0);
    for (size_t d = info.shape.size(); d-- > 0;) {
      info.stride[d] = stride;
      stride *= static_cast<int64_t>(info.shape[d]);
    }
    info.storage = t.name;
    info.offset = 0;
    info.nbytes = t.byte_size();
    out.storages.push_back({t.name, info.dtype, t.byte_size(), t.byte_size()});
    out.stored_bytes += t.byte_size();
    out.referenced_bytes += t.byte_size();
    out.tensors.push_back(std::move(info));
  }
  return out;
}

}  // namespace

Result<Listing> ListFile(Env* env, const std::string& path, const ListOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
  ZF_ASSIGN_OR_RETURN(FileFormat format, SniffFormat(*src));
  if (format == FileFormat::kSafetensors) {
    safetensors::ReadOptions st;
    st.max_header_bytes = options.max_safetensors_header;
    Result<safetensors::File> file = safetensors::ReadHeader(*src, st);
    if (!file.ok()) return Status(file.status()).WithPath(path);
    return ListSafetensors(*file, path);
  }
  // A listing needs no storage offsets: no storage record's local header
  // is read (a few reads for a whole archive, over a remote source).
  torch::ReadOptions read = options.torch;
  read.locate_records = false;
  Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(*src, read);
  if (!ckpt.ok()) return Status(ckpt.status()).WithPath(path);
  return ListCheckpoint(*ckpt, path);
}

}  // namespace zerofold::model
