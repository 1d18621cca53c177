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

TEST_CASE("safetensors dtypes torch 1.13 has no storage class for are pickled as torch 2.x pickles them") {
  // U16 and F8_E4M3: _rebuild_tensor_v3 on a torch.storage.UntypedStorage (torch/state_dict.h).
  constexpr std::string_view u16 =
      R"({"x":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},"z":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[4,7]}})";
  io::MemSource src("u.safetensors", File(u16, 7));
  for (SafetensorsGraph g : {SafetensorsGraph::kSkip, SafetensorsGraph::kBuild}) {
    Result<CheckpointFile> read = ReadCheckpointFile(src, {}, g);
    REQUIRE(read.ok());
    CHECK_EQ(read->ckpt.tensors[0].dtype, DType::kUInt16);
    CHECK_EQ(read->ckpt.tensors[1].dtype, DType::kFloat8E4M3FN);
  }
  Result<CheckpointFile> build = ReadCheckpointFile(src, {}, SafetensorsGraph::kBuild);
  REQUIRE(build.ok());
  Result<std::vector<std::byte>> pkl = pickle::Encode(build->ckpt.graph, build->ckpt.root);
  REQUIRE(pkl.ok());
  std::string text(reinterpret_cast<const char*>(pkl->data()), pkl->size());
  CHECK(text.find("torch._utils\n_rebuild_tensor_v3\n") != std::string::npos);
  CHECK(text.find("torch.storage\nUntypedStorage\n") != std::string::npos);
  CHECK(text.find("torch\nuint16\n") != std::string::npos);
  CHECK(text.find("torch\nfloat8_e4m3fn\n") != std::string::npos);
  CHECK(text.find("_rebuild_tensor_v2") == std::string::npos);
}

TEST_CASE("safetensors dtypes torch lacks: F6, and F4 without a torch shape") {
  // F4 is float4_e2m1fn_x2 with the last dimension halved (two values per byte).
  constexpr std::string_view f4 = R"({"y":{"dtype":"F4","shape":[3,4],"data_offsets":[0,6]}})";
  io::MemSource src4("f4.safetensors", File(f4, 6));
  Result<CheckpointFile> f4read = ReadCheckpointFile(src4, {}, SafetensorsGraph::kBuild);
  REQUIRE(f4read.ok());
  CHECK_EQ(f4read->ckpt.tensors[0].dtype, DType::kFloat4E2M1FNx2);
  CHECK_EQ(f4read->ckpt.tensors[0].shape, std::vector<int64_t>{3, 2});
  CHECK_EQ(f4read->ckpt.tensors[0].nbytes(), 6u);
  // An odd last dimension has no torch shape.
  constexpr std::string_view odd = R"({"y":{"dtype":"F4","shape":[2],"data_offsets":[0,1]},"w":{"dtype":"F4","shape":[3,2],"data_offsets":[1,4]}})";
  io::MemSource srco("odd.safetensors", File(odd, 4));
  Result<CheckpointFile> none = ReadCheckpointFile(srco, {}, SafetensorsGraph::kSkip);
  REQUIRE(none.ok());
  constexpr std::string_view odd2 = R"({"y":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})";
  io::MemSource srco2("odd.safetensors", File(odd2, 3));
  none = ReadCheckpointFile(srco2, {}, SafetensorsGraph::kSkip);
  CHECK_EQ(none.status().code(), Code::kUnsupported);
  CHECK_EQ(none.status().record(), "y");
  CHECK_EQ(none.status().offset(), 9u);  // the name's quote in the header
  CHECK(none.status().message().find("F4 tensor of shape [2, 3] has no torch shape") == 0);
  // F6 has no torch dtype at all.
  constexpr std::string_view f6 = R"({"v":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}})";
  io::MemSource src6("f6.safetensors", File(f6, 3));
  none = ReadCheckpointFile(src6, {}, SafetensorsGraph::kSkip);
  CHECK_EQ(none.status().code(), Code::kUnsupported);
  CHECK_EQ(none.status().record(), "v");
  CHECK_EQ(none.status().message(), "dtype F6_E2M3 has no torch dtype");
}

TEST_CASE("safetensors tensors torch cannot hold are read as bytes on request") {
  constexpr std::string_view f6 =
      R"({"v":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]},"w":{"dtype":"F4","shape":[2,3],"data_offsets":[3,6]},"x":{"dtype":"F32","shape":[1],"data_offsets":[6,10]}})";
  io::MemSource src("f6.safetensors", File(f6, 10));
  CHECK_EQ(ReadCheckpointFile(src, {}, SafetensorsGraph::kSkip).status().code(), Code::kUnsupported);
  Result<CheckpointFile> read = ReadCheckpointFile(src, {}, SafetensorsGraph::kBuild, TorchlessTensors::kAsBytes);
  REQUIRE(read.ok());
  REQUIRE_EQ(read->ckpt.tensors.size(), 3u);
  CHECK_EQ(read->ckpt.tensors[0].dtype, DType::kUInt8);
  CHECK_EQ(read->ckpt.tensors[0].shape, std::vector<int64_t>{3});
  CHECK_EQ(read->ckpt.tensors[1].shape, std::vector<int64_t>{3});
  CHECK_EQ(read->ckpt.tensors[2].dtype, DType::kFloat32);
  REQUIRE_EQ(read->torchless.size(), 2u);
  CHECK_EQ(read->torchless[0].name, "v");
  CHECK_EQ(read->torchless[0].dtype, safetensors::Dtype::F6_E2M3);
  CHECK_EQ(read->torchless[0].shape, std::vector<uint64_t>{4});
  CHECK_EQ(read->torchless[1].name, "w");
  CHECK_EQ(read->torchless[1].dtype, safetensors::Dtype::F4);
  CHECK_EQ(read->torchless[1].shape, std::vector<uint64_t>{2, 3});
}

}  // namespace
}  // namespace zerofold::model
