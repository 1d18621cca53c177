#include "model/checkpoint_file.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../safetensors/test_files.h"
#include "io/mem.h"
#include "pickle/encoder.h"
#include "torch/state_dict.h"

namespace zerofold::model {
namespace {

using safetensors::testing::File;
using torch::DType;

// "b" (F32 [2, 3]) first in the data, then "a" (I64 [2]), then "c" (BF16 []): header order
// is not name order, and data order is neither.
constexpr std::string_view kHeader =
    R"({"b":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("__metadata__":{"format":"pt","k":"v"},)"
    R"("c":{"dtype":"BF16","shape":[],"data_offsets":[40,42]},)"
    R"("a":{"dtype":"I64","shape":[2],"data_offsets":[24,40]}})";

TEST_CASE("a safetensors file is the model torch.save writes for load_file's state dict") {
  io::MemSource src("m.safetensors", File(kHeader, 42));
  Result<CheckpointFile> read = ReadCheckpointFile(src, {}, SafetensorsGraph::kBuild);
  REQUIRE(read.ok());
  CHECK(read->format == model::FileFormat::kSafetensors);
  const torch::Checkpoint& ckpt = read->ckpt;
  const uint64_t data_start = 8 + kHeader.size();
  // Name order; one storage per tensor, keyed in that order, at the tensor's bytes.
  REQUIRE_EQ(ckpt.tensors.size(), 3u);
  const std::vector<std::string> names = {"a", "b", "c"};
  const std::vector<DType> dtypes = {DType::kInt64, DType::kFloat32, DType::kBFloat16};
  const std::vector<std::vector<int64_t>> shapes = {{2}, {2, 3}, {}};
  const std::vector<std::vector<int64_t>> strides = {{1}, {3, 1}, {}};
  const std::vector<uint64_t> offsets = {24, 0, 40}, sizes = {16, 24, 2};
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const torch::Tensor& t = ckpt.tensors[i];
    CHECK_EQ(t.name, names[i]);
    CHECK_EQ(t.dtype, dtypes[i]);
    CHECK_EQ(t.shape, shapes[i]);
    CHECK_EQ(t.stride, strides[i]);
    CHECK_EQ(t.storage_offset, 0);
    CHECK_EQ(t.storage, i);
    const torch::Storage& s = ckpt.storages[i];
    CHECK_EQ(s.key, std::to_string(i));
    CHECK_EQ(s.record, names[i]);
    CHECK_EQ(s.data_offset, data_start + offsets[i]);
    CHECK_EQ(s.nbytes, sizes[i]);
    CHECK_EQ(s.pid_node, t.pid);
  }
  CHECK_EQ(read->metadata, std::vector<std::pair<std::string, std::string>>{{"format", "pt"}, {"k", "v"}});
  // The graph encodes to torch.save's bytes for that OrderedDict (merge/pickle.h).
  std::vector<torch::StateDictEntry> entries;
  for (size_t i = 0; i < 3; ++i) entries.push_back({names[i], dtypes[i], shapes[i], i});
  Result<torch::StateDictPickle> want = torch::EncodeStateDict(entries);
  REQUIRE(want.ok());
  Result<std::vector<std::byte>> got = pickle::Encode(ckpt.graph, ckpt.root);
  REQUIRE(got.ok());
  CHECK(*got == want->data_pkl);
}

TEST_CASE("safetensors dtypes torch lacks, or torch 1.13 cannot pickle") {
  // U16: readable (diff), but not as a torch.save model (no typed storage class in torch 1.13).
  constexpr std::string_view u16 = R"({"x":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})";
  io::MemSource src("u.safetensors", File(u16, 4));
  Result<CheckpointFile> skip = ReadCheckpointFile(src, {}, SafetensorsGraph::kSkip);
  REQUIRE(skip.ok());
  CHECK_EQ(skip->ckpt.tensors[0].dtype, DType::kUInt16);
  Result<CheckpointFile> build = ReadCheckpointFile(src, {}, SafetensorsGraph::kBuild);
  CHECK_EQ(build.status().code(), Code::kUnsupported);
  CHECK_EQ(build.status().record(), "x");
  CHECK_EQ(build.status().offset(), 9u);  // the name's quote in the header
  // F4 has no torch dtype at all.
  constexpr std::string_view f4 = R"({"y":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})";
  io::MemSource src4("f4.safetensors", File(f4, 1));
  Result<CheckpointFile> none = ReadCheckpointFile(src4, {}, SafetensorsGraph::kSkip);
  CHECK_EQ(none.status().code(), Code::kUnsupported);
  CHECK_EQ(none.status().record(), "y");
  CHECK_EQ(none.status().message(), "dtype F4 has no torch dtype");
}

}  // namespace
}  // namespace zerofold::model
