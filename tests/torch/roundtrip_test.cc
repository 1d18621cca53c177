// The writer's side of the checkpoint model, end to end: read a fixture,
// give every view an exactly sized storage of its own (RetargetTensors), re-
// encode the graph, write an archive whose storages are copied from the
// input's records, and read it back. Every tensor must keep its name, dtype,
// shape, stride and logical bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem.h"
#include "pickle/encoder.h"
#include "test_files.h"
#include "torch/archive_writer.h"
#include "torch/checkpoint.h"
#include "torch/read.h"
#include "torch/retarget.h"

namespace zerofold::torch {
namespace {

// The tensor's elements in row-major order, read through its strides.
std::vector<std::byte> LogicalBytes(const Tensor& t, const Storage& s, const std::vector<std::byte>& file) {
  const uint64_t item = Info(t.dtype).itemsize;
  std::vector<std::byte> out;
  if (t.numel() == 0) return out;
  std::vector<int64_t> index(t.shape.size(), 0);
  while (true) {
    int64_t element = t.storage_offset;
    for (size_t d = 0; d < index.size(); ++d) element += index[d] * t.stride[d];
    uint64_t at = s.data_offset + static_cast<uint64_t>(element) * item;
    REQUIRE_LE(at + item, file.size());
    out.insert(out.end(), file.begin() + static_cast<std::ptrdiff_t>(at),
               file.begin() + static_cast<std::ptrdiff_t>(at + item));
    size_t d = index.size();
    while (d > 0 && ++index[d - 1] == t.shape[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
  return out;
}

TEST_CASE("retarget, encode, write, read back: every view keeps its values in exactly sized storages") {
  const char* fixtures[] = {
      "fixtures/torch/views.pt",
      "fixtures/torch/tied_weights.pt",
      "fixtures/torch/transposed_expand.pt",
      "fixtures/torch/scalars_empty.pt",
      "fixtures/torch/dtypes.pt",
      "fixtures/torch/parameters.pt",
      "fixtures/torch/legacy_views_tied.pt",
      "fixtures/hf/bloated/pytorch_model-00001-of-00003.bin",
      "fixtures/deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00002-of-00003.bin",
  };
  for (const char* rel : fixtures) {
    CAPTURE(rel);
    std::vector<std::byte> input = testing::FixtureBytes(rel);
    io::MemSource src(rel, input);
    Result<Checkpoint> read = ReadCheckpoint(src);
    REQUIRE_MESSAGE(read.ok(), read.status().ToString());
    Checkpoint c = std::move(read).value();
    const std::vector<Tensor> before = c.tensors;
    const std::vector<Storage> before_storages = c.storages;

    // One storage per distinct rebuild call, holding exactly its extent.
    std::vector<NewStorage> storages;
    std::vector<NewPlacement> placements;
    std::vector<ByteRange> source;  // input byte range of each new storage
    std::vector<pickle::NodeId> args_seen;
    uint64_t extents = 0;
    for (const Tensor& t : c.tensors) {
      auto it = std::find(args_seen.begin(), args_seen.end(), t.args);
      uint32_t index = static_cast<uint32_t>(it - args_seen.begin());
      Result<ByteRange> extent = ViewExtent(t);
      REQUIRE(extent.ok());
      if (it == args_seen.end()) {
        args_seen.push_back(t.args);
        std::string key = std::to_string(index);
        storages.push_back({key, extent->end - extent->begin, t.storage});
        source.push_back(*extent);
        extents += extent->end - extent->begin;
      }
      // The view's first element sits at the start of its storage, or at 0
      // for an empty view.
      placements.push_back({index, 0});
    }
    REQUIRE(RetargetTensors(c, storages, placements).ok());
    Result<std::vector<std::byte>> pkl = pickle::Encode(c.graph, c.root);
    REQUIRE_MESSAGE(pkl.ok(), pkl.status().ToString());
    std::vector<StorageRecord> records;
    for (const NewStorage& s : storages) records.push_back({s.key, s.nbytes});
    ArchiveContents contents;
    contents.top_folder = "archive";
    contents.data_pkl = *pkl;
    contents.storages = records;
    io::MemSink sink;
    auto fill = [&](size_t i, const EmitBytes& emit) -> Status {
      const Storage& in = before_storages[storages[i].input_storage];
      return emit(std::span(input).subspan(in.data_offset + source[i].begin, storages[i].nbytes));
    };
    REQUIRE(WriteTorchArchive(contents, fill, &sink).ok());

    io::MemSource out_src("out.pt", sink.bytes());
    Result<Checkpoint> out = ReadCheckpoint(out_src);
    REQUIRE_MESSAGE(out.ok(), out.status().ToString());
    CHECK_EQ(out->format, Format::kTorchZip);
    REQUIRE_EQ(out->tensors.size(), before.size());
    uint64_t stored = 0;
    for (const Storage& s : out->storages) stored += s.nbytes;
    CHECK_EQ(stored, extents);
    for (size_t i = 0; i < before.size(); ++i) {
      const Tensor& a = before[i];
      const Tensor& b = out->tensors[i];
      CAPTURE(a.name);
      CHECK_EQ(b.name, a.name);
      CHECK_EQ(b.dtype, a.dtype);
      CHECK_EQ(b.shape, a.shape);
      CHECK_EQ(b.stride, a.stride);
      CHECK_EQ(b.requires_grad, a.requires_grad);
      CHECK_EQ(b.is_parameter, a.is_parameter);
      CHECK_EQ(b.storage_offset, 0);
      CHECK(LogicalBytes(b, out->storages[b.storage], sink.bytes()) ==
            LogicalBytes(a, before_storages[a.storage], input));
    }
  }
}

}  // namespace
}  // namespace zerofold::torch
