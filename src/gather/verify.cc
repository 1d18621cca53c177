#include "gather/verify.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "safetensors/reader.h"
#include "torch/read.h"
#include "torch/state_dict.h"
#include "torch/storage_source.h"

namespace zerofold::gather {


namespace {

Status Mismatch(const std::string& path, const std::string& name, std::string why) {
  return Status::Corrupt("verify: " + std::move(why)).WithPath(path).WithRecord(name);
}

// Hashes `len` bytes of `src` at `offset` through `buffer`.
Result<torch::Hash128> HashRange(const RandomSource& src, uint64_t offset, uint64_t len, std::vector<std::byte>& buffer,
                            torch::Xxh3Hasher& hasher, const std::function<void(uint64_t)>& progress) {
  hasher.Reset();
  uint64_t done = 0;
  while (done < len) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), len - done));
    std::span<std::byte> chunk(buffer.data(), n);
    ZF_TRY(ReadExactAt(src, offset + done, chunk));
    hasher.Update(chunk);
    done += n;
    if (progress) progress(n);
  }
  return hasher.Digest();
}

// What an output file holds for an entry.
struct Found {
  torch::DType dtype;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
};

class Verifier {
 public:
  Verifier(const GatherPlan& plan, const MergeLayout& layout, TensorAssembler& assembler, size_t buffer_bytes,
           const std::function<void(uint64_t)>& progress)
      : plan_(plan), layout_(layout), assembler_(assembler), buffer_(std::max(buffer_bytes, torch::kMinDigestBuffer)),
        progress_(progress) {}

  // The digest of plan tensor `tensor` assembled from the rank files.
  Result<torch::Hash128> SourceDigest(size_t tensor) {
    auto hit = source_digests_.find(tensor);
    if (hit != source_digests_.end()) return hit->second;
    hasher_.Reset();
    ZF_TRY(assembler_.Assemble(plan_.tensors[tensor], [&](std::span<const std::byte> bytes) {
      hasher_.Update(bytes);
      return Status::OK();
    }));
    torch::Hash128 d = hasher_.Digest();
    source_digests_.emplace(tensor, d);
    return d;
  }

  // Checks one entry against what the file holds; `digest` hashes the
  // entry's bytes in the file.
  Status Check(const std::string& path, const OutputEntry& e, const Found& f,
               const std::function<Result<torch::Hash128>()>& digest, VerifyResult* result) {
    const GatherTensor& t = plan_.tensors[e.tensor];
    if (f.dtype != t.dtype)
      return Mismatch(path, e.name, "dtype " + std::string(torch::Info(f.dtype).name) + ", planned " +
                                        std::string(torch::Info(t.dtype).name));
    if (f.shape != t.shape)
      return Mismatch(path, e.name, "shape " + torch::ShapeText(f.shape) + ", planned " + torch::ShapeText(t.shape));
    if (f.nbytes != OutputBytes(t))
      return Mismatch(path, e.name,
                      std::to_string(f.nbytes) + " bytes, planned " + std::to_string(OutputBytes(t)));
    Result<torch::Hash128> written = digest();
    if (!written.ok()) return Status(written.status()).WithRecord(e.name).WithPath(path);
    ZF_ASSIGN_OR_RETURN(torch::Hash128 source, SourceDigest(e.tensor));
    if (!(*written == source))
      return Mismatch(path, e.name,
                      "xxh3-128 of the written bytes " + written->Hex() + ", of the sources' " + source.Hex());
    ++result->tensors;
    result->bytes += f.nbytes;
    return Status::OK();
  }

  Status VerifyTorch(const RandomSource& src, const MergeOutputFile& file, const torch::ReadOptions& read,
                     VerifyResult* result) {
    Result<torch::Checkpoint> ckpt = torch::ReadCheckpoint(src, read);
    if (!ckpt.ok()) return Status(ckpt.status()).WithPath(file.path);
    std::unordered_map<std::string, const torch::Tensor*> by_name;
    for (const torch::Tensor& t : ckpt->tensors) by_name.emplace(t.name, &t);
    if (ckpt->tensors.size() != file.entries.size() || by_name.size() != file.entries.size())
      return Mismatch(file.path, "", std::to_string(ckpt->tensors.size()) + " tensors read back, " +
                                         std::to_string(file.entries.size()) + " written");
    std::unordered_map<size_t, uint32_t> storage_of;   // layout entry -> storage index
    std::unordered_map<uint32_t, size_t> holder_of;    // storage index -> layout entry holding it
    for (size_t index : file.entries) {
      const OutputEntry& e = layout_.entries[index];
      auto it = by_name.find(e.name);
      if (it == by_name.end()) return Mismatch(file.path, e.name, "not in the output");
      const torch::Tensor& t = *it->second;
      if (t.storage_offset != 0 || t.stride != torch::ContiguousStrides(t.shape))
        return Mismatch(file.path, e.name, "not contiguous at offset 0 (offset " + std::to_string(t.storage_offset) +
                                               ", stride " + torch::ShapeText(t.stride) + ")");
      storage_of.emplace(index, t.storage);
      auto owner = storage_of.find(e.owner);
      if (e.tie && owner != storage_of.end() && index != e.owner) {
        if (owner->second != t.storage)
          return Mismatch(file.path, e.name, "does not share the storage of " + layout_.entries[e.owner].name);
        continue;  // same bytes as the owner, checked there
      }
      if (!holder_of.emplace(t.storage, index).second)
        return Mismatch(file.path, e.name, "shares storage " + ckpt->storages[t.storage].key + " with " +
                                               layout_.entries[holder_of[t.storage]].name);
      const torch::Storage& s = ckpt->storages[t.storage];
      if (s.nbytes != t.nbytes())
        return Mismatch(file.path, e.name, "storage " + s.key + " holds " + std::to_string(s.nbytes) +
                                               " bytes for a tensor of " + std::to_string(t.nbytes()));
      auto digest = [&]() -> Result<torch::Hash128> {
        // The written file's CRC-32s are not checked: its digests are.
        torch::StorageSources written(src, torch::StorageSources::Bytes::kAsTorchLoads,
                                            torch::RecordCrc::kSkip);
        Result<torch::Hash128> d = torch::TensorDigest(written, *ckpt, t, buffer_);
        if (d.ok() && progress_) progress_(t.nbytes());
        return d;
      };
      ZF_TRY(Check(file.path, e, Found{t.dtype, t.shape, t.nbytes()}, digest, result));
    }
    // Ties checked by storage identity count as verified too.
    result->tensors += file.entries.size() - holder_of.size();
    return Status::OK();
  }

  Status VerifySafetensors(const RandomSource& src, const MergeOutputFile& file, VerifyResult* result) {
    Result<safetensors::File> header = safetensors::ReadHeader(src);
    if (!header.ok()) return Status(header.status()).WithPath(file.path);
    if (header->tensors.size() != file.entries.size())
      return Mismatch(file.path, "", std::to_string(header->tensors.size()) + " tensors read back, " +
                                         std::to_string(file.entries.size()) + " written");
    for (size_t index : file.entries) {
      const OutputEntry& e = layout_.entries[index];
      const safetensors::TensorInfo* info = header->Find(e.name);
      if (info == nullptr) return Mismatch(file.path, e.name, "not in the output");
      if (!info->torch_dtype) return Mismatch(file.path, e.name, "a dtype torch has no name for");
      Found f{*info->torch_dtype, info->torch_shape, info->byte_size()};
      auto digest = [&]() {
        return HashRange(src, info->data_offset, info->byte_size(), buffer_, hasher_, progress_);
      };
      ZF_TRY(Check(file.path, e, f, digest, result));
    }
    return Status::OK();
  }

 private:
  const GatherPlan& plan_;
  const MergeLayout& layout_;
  TensorAssembler& assembler_;
  std::vector<std::byte> buffer_;
  const std::function<void(uint64_t)>& progress_;
  torch::Xxh3Hasher hasher_;
  std::unordered_map<size_t, torch::Hash128> source_digests_;  // by plan tensor
};

}  // namespace

Result<VerifyResult> VerifyMergeOutput(std::span<const RandomSource* const> written, const GatherPlan& plan,
                                       const MergeLayout& layout, std::span<const MergeOutputFile> files,
                                       MergeFormat format,
                                       TensorAssembler& assembler, const torch::ReadOptions& read,
                                       size_t buffer_bytes, const std::function<void(uint64_t)>& progress) {
  Verifier v(plan, layout, assembler, buffer_bytes, progress);
  VerifyResult result;
  if (written.size() != files.size()) return Status::Internal("VerifyMergeOutput: one source per file");
  for (size_t k = 0; k < files.size(); ++k) {
    if (format == MergeFormat::kTorch) {
      ZF_TRY(v.VerifyTorch(*written[k], files[k], read, &result));
    } else {
      ZF_TRY(v.VerifySafetensors(*written[k], files[k], &result));
    }
  }
  return result;
}

}  // namespace zerofold::gather
