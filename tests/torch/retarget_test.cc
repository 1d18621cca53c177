#include "torch/retarget.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem.h"
#include "test_files.h"
#include "torch/read.h"
#include "torch/tensor_recognizer.h"

namespace zerofold::torch {
namespace {

Checkpoint Read(const std::string& rel) {
  io::MemSource src(rel, testing::FixtureBytes(rel));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  return std::move(c).value();
}

// One exactly sized storage per distinct args node, the view at offset 0 of
// it: what a shrink does to disjoint views. Keys "s0", "s1", ...
void ShrinkEach(Checkpoint& c, std::vector<NewStorage>& storages, std::vector<NewPlacement>& placements) {
  std::vector<pickle::NodeId> args_seen;
  for (const Tensor& t : c.tensors) {
    auto it = std::find(args_seen.begin(), args_seen.end(), t.args);
    uint32_t index = static_cast<uint32_t>(it - args_seen.begin());
    if (it == args_seen.end()) {
      args_seen.push_back(t.args);
      Result<ByteRange> extent = ViewExtent(t);
      REQUIRE(extent.ok());
      std::string key = "s";
      key += std::to_string(index);
      storages.push_back({key, extent->end - extent->begin, t.storage});
    }
    placements.push_back({index, 0});
  }
}

TEST_CASE("retargeted views name their new storages and offsets; ties move together") {
  for (const char* rel : {"fixtures/torch/tied_weights.pt", "fixtures/torch/legacy_views_tied.pt"}) {
    CAPTURE(rel);
    Checkpoint c = Read(rel);
    std::vector<Tensor> before = c.tensors;
    std::vector<NewStorage> storages;
    std::vector<NewPlacement> placements;
    ShrinkEach(c, storages, placements);
    REQUIRE(RetargetTensors(c, storages, placements).ok());
    // Each rebuild call's args now start with a zip-format pid (five items,
    // legacy input or not) naming the new storage, then the new offset.
    for (size_t i = 0; i < before.size(); ++i) {
      const Tensor& t = before[i];
      CAPTURE(t.name);
      pickle::NodeId pid = c.graph.Items(t.args)[0];
      REQUIRE_EQ(c.graph.kind(pid), pickle::Kind::kPersId);
      Result<std::optional<StoragePid>> p = ParseStoragePid(c.graph, pid, Format::kTorchZip);
      REQUIRE_MESSAGE(p.ok(), p.status().ToString());
      const NewStorage& want = storages[placements[i].storage];
      CHECK_EQ((*p)->key, want.key);
      CHECK_EQ((*p)->nbytes, want.nbytes);
      CHECK_EQ((*p)->dtype, t.dtype);
      CHECK_EQ(c.graph.AsInt(c.graph.Items(t.args)[1]), 0);
    }
  }
}

TEST_CASE("a retargeted zip checkpoint recognizes as the new layout") {
  Checkpoint c = Read("fixtures/torch/views.pt");
  std::vector<Tensor> before = c.tensors;
  std::vector<NewStorage> storages;
  std::vector<NewPlacement> placements;
  ShrinkEach(c, storages, placements);
  REQUIRE(RetargetTensors(c, storages, placements).ok());
  Result<Recognized> r = RecognizeTensors(c.graph, c.root, RecognizeOptions{Format::kTorchZip});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  REQUIRE_EQ(r->tensors.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    const Tensor& t = r->tensors[i];
    CAPTURE(t.name);
    CHECK_EQ(t.name, before[i].name);
    CHECK_EQ(t.shape, before[i].shape);
    CHECK_EQ(t.stride, before[i].stride);
    CHECK_EQ(t.storage_offset, 0);
    CHECK_EQ(r->storages[t.storage].key, storages[placements[i].storage].key);
    CHECK_EQ(r->storages[t.storage].nbytes, storages[placements[i].storage].nbytes);
  }
}

TEST_CASE("tied weights share one new storage; an unchanged zip pid is left alone") {
  Checkpoint c = Read("fixtures/torch/tied_weights.pt");
  // embed.weight and lm_head.weight are one node (same args).
  REQUIRE_GE(c.tensors.size(), 2u);
  CHECK_EQ(c.tensors[0].args, c.tensors[1].args);
  std::vector<NewStorage> storages;
  std::vector<NewPlacement> placements;
  for (const Tensor& t : c.tensors) {
    const Storage& s = c.storages[t.storage];
    // Keep every storage as it is, same key: nothing may change.
    if (storages.size() <= t.storage) storages.resize(c.storages.size());
    storages[t.storage] = {s.key, s.nbytes, t.storage};
    placements.push_back({t.storage, t.storage_offset});
  }
  size_t nodes = c.graph.size();
  REQUIRE(RetargetTensors(c, storages, placements).ok());
  CHECK_EQ(c.graph.size(), nodes);  // no new pid, no new node
}

TEST_CASE("a storage of a fraction of an element is refused") {
  Checkpoint c = Read("fixtures/torch/views.pt");  // float32 views
  std::vector<NewStorage> storages = {{"x", 6, 0}};
  std::vector<NewPlacement> placements(c.tensors.size(), NewPlacement{0, 0});
  Status s = RetargetTensors(c, storages, placements);
  CHECK_EQ(s.code(), Code::kInvalidArgument);
  CHECK_EQ(s.message(), "storage x of 6 bytes is not a whole number of 4-byte elements");
}

}  // namespace
}  // namespace zerofold::torch
