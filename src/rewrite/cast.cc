#include "rewrite/cast.h"

#include <algorithm>
#include <string>

#include "io/checked_math.h"

namespace zerofold::rewrite {

std::optional<torch::DType> ParseCastTarget(std::string_view name) {
  struct Alias {
    std::string_view name;
    torch::DType dtype;
  };
  static constexpr Alias kAliases[] = {{"bf16", torch::DType::kBFloat16}, {"fp16", torch::DType::kFloat16},
                                       {"half", torch::DType::kFloat16},  {"fp32", torch::DType::kFloat32},
                                       {"float", torch::DType::kFloat32}};
  for (torch::DType d : {torch::DType::kBFloat16, torch::DType::kFloat16, torch::DType::kFloat32})
    if (torch::Info(d).name == name) return d;
  for (const Alias& a : kAliases)
    if (a.name == name) return a.dtype;
  return std::nullopt;
}

Result<torch::DType> OutputDType(torch::DType dtype, std::optional<torch::DType> target) {
  if (!target || dtype == *target) return dtype;
  const torch::DTypeInfo& info = torch::Info(dtype);
  if (!info.is_floating || info.is_complex) return dtype;
  if (!torch::IsCastable(dtype))
    return Status::Unsupported("--dtype " + std::string(torch::Info(*target).name) + " cannot convert " +
                               std::string(info.name) + " tensors");
  return *target;
}

uint64_t OutputNbytes(const torch::Tensor& tensor, torch::DType out) {
  if (out == tensor.dtype) return tensor.nbytes();
  std::optional<uint64_t> n = io::CheckedMul<uint64_t>(tensor.numel(), torch::Info(out).itemsize);
  return n ? *n : UINT64_MAX;
}

Result<std::vector<StorageCast>> PlanStorageCasts(const torch::Checkpoint& ckpt, const plan::ShrinkPlan& plan,
                                                  std::optional<torch::DType> target) {
  std::vector<StorageCast> casts(plan.storages.size());
  std::vector<bool> seen(plan.storages.size(), false);
  std::vector<const torch::Tensor*> first(plan.storages.size(), nullptr);
  for (size_t t = 0; t < ckpt.tensors.size(); ++t) {
    const torch::Tensor& tensor = ckpt.tensors[t];
    const uint32_t s = plan.views[t].output_storage;
    Result<torch::DType> out = OutputDType(tensor.dtype, target);
    if (!out.ok()) return Status(out.status()).WithRecord(tensor.name);
    if (!seen[s]) {
      seen[s] = true;
      casts[s] = {tensor.dtype, *out, torch::TorchNanRule(tensor.shape, tensor.stride), 0};
      first[s] = &tensor;
      continue;
    }
    StorageCast& c = casts[s];
    const torch::Tensor& f = *first[s];
    if (tensor.storage_offset != f.storage_offset || tensor.shape != f.shape || tensor.stride != f.stride)
      c.nan.f64_vector_end = UINT64_MAX;  // positions in the storage are no view's C order
    if ((c.from != tensor.dtype || c.to != *out) && (c.cast() || tensor.dtype != *out))
      return Status::Unsupported("storage " + plan.storages[s].key + " is viewed as " +
                                 std::string(torch::Info(c.from).name) + " and as " +
                                 std::string(torch::Info(tensor.dtype).name) + "; --dtype cannot cast it")
          .WithRecord(tensor.name);
  }
  for (size_t s = 0; s < casts.size(); ++s) {
    StorageCast& c = casts[s];
    const uint64_t n = plan.storages[s].nbytes();
    if (!seen[s]) {  // no views: never written as anything but bytes
      c = {torch::DType::kUInt8, torch::DType::kUInt8, {}, n};
      continue;
    }
    c.out_nbytes = c.cast() ? n / torch::Info(c.from).itemsize * torch::Info(c.to).itemsize : n;
  }
  return casts;
}

std::vector<std::optional<torch::DType>> CastTargets(std::span<const StorageCast> casts) {
  std::vector<std::optional<torch::DType>> out;
  for (const StorageCast& c : casts) out.push_back(c.cast() ? std::optional(c.to) : std::nullopt);
  return out;
}

CastCopier::CastCopier(size_t buffer_bytes)
    : in_(std::max<size_t>(buffer_bytes, 64)), out_(std::max<size_t>(buffer_bytes, 64) * 4) {}

Status CastCopier::Copy(const RandomSource& src, uint64_t offset, uint64_t nbytes, const StorageCast& cast,
                        std::string_view record, const std::function<Status(std::span<const std::byte>)>& emit) {
  const size_t in_item = torch::Info(cast.from).itemsize, out_item = torch::Info(cast.to).itemsize;
  // Whole input elements per chunk; the output of a chunk is at most 4x
  // (bfloat16 -> float64), which out_ holds.
  const size_t chunk = std::max<size_t>(in_.size() / in_item, 1) * in_item;
  if (chunk > in_.size()) in_.resize(chunk);
  if (chunk / in_item * out_item > out_.size()) out_.resize(chunk / in_item * out_item);
  for (uint64_t pos = 0; pos < nbytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, nbytes - pos));
    std::span<std::byte> in(in_.data(), n);
    Status read = ReadExactAt(src, offset + pos, in);
    if (!read.ok()) return read.WithRecord(record).WithPath(src.name());
    if (cast.cast()) {
      std::span<std::byte> out(out_.data(), n / in_item * out_item);
      ZF_TRY(torch::CastElements(cast.from, cast.to, in, out, cast.nan, pos / in_item));
      ZF_TRY(emit(out));
    } else {
      ZF_TRY(emit(in));
    }
    pos += n;
  }
  return Status::OK();
}

}  // namespace zerofold::rewrite
