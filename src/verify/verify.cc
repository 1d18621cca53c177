#include "verify/verify.h"

#include <algorithm>
#include <string>
#include <vector>

#include "io/checked_math.h"
#include "model/checkpoint_file.h"
#include "model/select.h"
#include "torch/read.h"

namespace zerofold::verify {

using torch::Hash128;
using torch::TensorDigest;

namespace {

// Every tensor's digest, indexed as ckpt.tensors, computed in the order of
// (storage, storage offset).
Result<std::vector<torch::Hash128>> DigestsInStorageOrder(torch::StorageSources& sources, const torch::Checkpoint& ckpt,
                                                   std::span<std::byte> buffer) {
  std::vector<size_t> order(ckpt.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const torch::Tensor& a = ckpt.tensors[x];
    const torch::Tensor& b = ckpt.tensors[y];
    return a.storage != b.storage ? a.storage < b.storage : a.storage_offset < b.storage_offset;
  });
  std::vector<torch::Hash128> digests(order.size());
  for (size_t i : order) {
    ZF_ASSIGN_OR_RETURN(digests[i], torch::TensorDigest(sources, ckpt, ckpt.tensors[i], buffer));
  }
  return digests;
}

Status Mismatch(const torch::Tensor& t, const std::string& what) {
  return Status::Corrupt("tensor differs from the input: " + what).WithRecord(t.name);
}

// The output's dtype and shape against the input's: a Mismatch naming x.
Status CompareDtypeShape(const torch::Tensor& x, const torch::Tensor& y, const std::string& path) {
  if (x.dtype != y.dtype)
    return Mismatch(x, "dtype " + std::string(torch::Info(y.dtype).name) + ", input " +
                           std::string(torch::Info(x.dtype).name))
        .WithPath(path);
  if (x.shape != y.shape)
    return Mismatch(x, "shape " + torch::ShapeText(y.shape) + ", input " + torch::ShapeText(x.shape)).WithPath(path);
  return Status::OK();
}

Status CompareDigests(const torch::Tensor& x, const torch::Tensor& y, const torch::Hash128& hx, const torch::Hash128& hy,
                      const std::string& path) {
  if (hx != hy)
    return Mismatch(x, "xxh3-128 of its " + std::to_string(y.nbytes()) + " bytes is " + hy.Hex() + ", input " +
                           hx.Hex())
        .WithPath(path);
  return Status::OK();
}

}  // namespace

Status CompareTensorValues(const RandomSource& a, const torch::Checkpoint& ckpt_a, const torch::Tensor& x,
                           const RandomSource& b, const torch::Checkpoint& ckpt_b, const torch::Tensor& y,
                           std::span<std::byte> buffer) {
  ZF_TRY(CompareDtypeShape(x, y, b.name()));
  ZF_ASSIGN_OR_RETURN(torch::Hash128 hx, torch::TensorDigest(a, ckpt_a, x, buffer));
  ZF_ASSIGN_OR_RETURN(torch::Hash128 hy, torch::TensorDigest(b, ckpt_b, y, buffer));
  return CompareDigests(x, y, hx, hy, b.name());
}

Result<VerifyReport> VerifyTensors(const RandomSource& a, const torch::Checkpoint& ckpt_a,
                                   const RandomSource& b, const torch::Checkpoint& ckpt_b,
                                   std::span<std::byte> buffer) {
  const std::string& path = b.name();
  if (ckpt_a.tensors.size() != ckpt_b.tensors.size())
    return Status::Corrupt("holds " + std::to_string(ckpt_b.tensors.size()) + " tensors, the input " +
                           std::to_string(ckpt_a.tensors.size()))
        .WithPath(path);
  // Digests in storage order: a deflated storage is read forward once.
  // The output's own CRC-32s are not checked: its digests are, and name
  // the tensor.
  torch::StorageSources sources_a(a), sources_b(b, torch::StorageSources::Bytes::kAsTorchLoads, torch::RecordCrc::kSkip);
  ZF_ASSIGN_OR_RETURN(std::vector<torch::Hash128> digests_a, DigestsInStorageOrder(sources_a, ckpt_a, buffer));
  ZF_TRY(sources_a.Finish());
  VerifyReport report;
  for (size_t i = 0; i < ckpt_a.tensors.size(); ++i) {
    const torch::Tensor& x = ckpt_a.tensors[i];
    const torch::Tensor& y = ckpt_b.tensors[i];
    Status differs;
    if (x.name != y.name) {
      differs = Mismatch(x, "the output has \"" + y.name + "\" in its place");
    } else if (x.dtype == y.dtype && x.shape == y.shape && x.stride != y.stride) {
      differs = Mismatch(x, "stride " + torch::ShapeText(y.stride) + ", input " + torch::ShapeText(x.stride));
    } else if (x.requires_grad != y.requires_grad || x.is_parameter != y.is_parameter ||
               x.quantized != y.quantized) {
      differs = Mismatch(x, "requires_grad, Parameter or quantized flag changed");
    }
    if (!differs.ok()) return differs.WithPath(path);
    ZF_TRY(CompareDtypeShape(x, y, path));
    ZF_ASSIGN_OR_RETURN(torch::Hash128 hy, torch::TensorDigest(sources_b, ckpt_b, y, buffer));
    ZF_TRY(CompareDigests(x, y, digests_a[i], hy, path));
    report.tensors++;
    report.bytes += x.nbytes();
  }
  return report;
}

Result<VerifyReport> VerifyWritten(const RandomSource& input, const RandomSource& output,
                                   const VerifyOptions& options) {
  Result<model::CheckpointFile> in = model::ReadCheckpointFile(input, options.read, model::SafetensorsGraph::kBuild);
  if (!in.ok()) return Status(in.status()).WithPath(input.name());
  if (Status s = model::SelectTensors(in->ckpt, options.select, options.only, options.read, /*none_ok=*/true); !s.ok()) return s.WithPath(input.name());
  return VerifyOutput(input, in->ckpt, output, options.read, options.buffer_bytes);
}

Result<VerifyReport> VerifyOutput(const RandomSource& input, const torch::Checkpoint& expected,
                                  const RandomSource& output, const torch::ReadOptions& read, size_t buffer_bytes) {
  Result<torch::Checkpoint> out = torch::ReadCheckpoint(output, read);
  if (!out.ok()) return Status(out.status()).WithPath(output.name());
  std::vector<std::byte> buffer(std::max(buffer_bytes, torch::kMinDigestBuffer));
  return VerifyTensors(input, expected, output, *out, buffer);
}

}  // namespace zerofold::verify
