// shrink never makes a file bigger: a storage is split only where that makes
// the file smaller, and an input the rewrite would not make smaller is
// copied unchanged. Checked on random view layouts built into real torch
// archives, and on every checkpoint fixture, in the file and stream forms.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "io/mem.h"
#include "io/mem_env.h"
#include "pickle/encoder.h"
#include "plan/shrink_plan.h"
#include "plan/split_cost.h"
#include "rewrite/shrink.h"
#include "support/fixtures.h"
#include "torch/archive_writer.h"
#include "torch/read.h"
#include "torch/retarget.h"
#include "torch/zip_checkpoint.h"
#include "verify/verify.h"

namespace zerofold::rewrite {
namespace {

using Bytes = std::vector<std::byte>;
using pickle::NodeId;
using torch::DType;

const DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64,
                         DType::kInt8,    DType::kFloat64, DType::kUInt8,    DType::kBool};

pickle::NodeId IntTuple(pickle::Graph& g, const std::vector<int64_t>& values) {
  std::vector<NodeId> items;
  for (int64_t v : values) items.push_back(g.AddInt(v));
  return g.AddSequence(pickle::Kind::kTuple, items);
}

NodeId Reduce(pickle::Graph& g, NodeId callable, std::vector<NodeId> args) {
  pickle::ObjectData o;
  o.callable = callable;
  o.args = g.AddSequence(pickle::Kind::kTuple, args);
  return g.AddObject(std::move(o));
}

// A torch archive as torch.save writes it, of 1-5 storages of random dtypes
// and sizes (some untyped, seen through views of several dtypes), each with
// 0-6 random views: 1-3 dimensions, strides contiguous, permuted, zero or
// spread, random offsets; views may overlap, touch, or be empty. Pids share
// their key string per storage, as torch.save's do.
Bytes RandomArchive(std::mt19937& rng, size_t max_storages = 5) {
  auto below = [&](uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  pickle::Graph g;
  const NodeId root = g.AddDict();
  const NodeId tag = g.AddStr("storage"), cpu = g.AddStr("cpu");
  const NodeId v2 = g.AddGlobal("torch._utils", "_rebuild_tensor_v2");
  const NodeId v3 = g.AddGlobal("torch._utils", "_rebuild_tensor_v3");
  const NodeId hooks_cls = g.AddGlobal("collections", "OrderedDict");
  std::vector<torch::StorageRecord> records;
  const size_t n_storages = 1 + below(max_storages);
  int name = 0;
  for (size_t s = 0; s < n_storages; ++s) {
    const bool untyped = below(4) == 0;
    const DType sdt = kDTypes[below(std::size(kDTypes))];
    const uint64_t sitem = untyped ? 1 : torch::Info(sdt).itemsize;
    // Mostly small, sometimes large enough that splitting pays.
    const uint64_t numel = below(3) == 0 ? below(20000) : below(300);
    const std::string key = std::to_string(s);
    const NodeId key_node = g.AddStr(key);
    const NodeId cls = untyped ? g.AddGlobal("torch.storage", "UntypedStorage")  // as torch writes it
                               : g.AddGlobal("torch", torch::Info(sdt).storage_class);
    const size_t n_views = below(7);
    bool named = false;  // torch.save writes the records of the storages its pickle names
    for (size_t v = 0; v < n_views; ++v) {
      const DType dt = untyped ? kDTypes[below(std::size(kDTypes))] : sdt;
      const uint64_t item = torch::Info(dt).itemsize;
      const uint64_t elems = numel * sitem / item;  // of dt in the storage
      const size_t dims = 1 + below(3);
      std::vector<int64_t> shape(dims), stride(dims);
      for (size_t d = 0; d < dims; ++d) shape[d] = static_cast<int64_t>(below(4) == 0 ? below(3) : 1 + below(12));
      int64_t step = 1;
      for (size_t d = dims; d-- > 0;) {
        stride[d] = step;
        step *= std::max<int64_t>(shape[d], 1);
      }
      if (below(4) == 0) std::reverse(stride.begin(), stride.end());  // permuted
      if (below(6) == 0) stride[below(dims)] = 0;                      // expanded
      if (below(6) == 0) stride[below(dims)] *= 1 + static_cast<int64_t>(below(5));  // spread
      uint64_t span = 1;
      bool empty = false;
      for (size_t d = 0; d < dims; ++d) {
        if (shape[d] == 0) empty = true;
        else span += static_cast<uint64_t>(shape[d] - 1) * static_cast<uint64_t>(stride[d]);
      }
      if (empty) span = 0;
      if (span > elems) continue;  // does not fit: no view
      const int64_t offset = static_cast<int64_t>(below(elems - span + 1));
      const NodeId pid = g.AddPersId(g.AddSequence(
          pickle::Kind::kTuple,
          std::vector<NodeId>{tag, cls, key_node, cpu, g.AddInt(static_cast<int64_t>(untyped ? numel * sitem : numel))}));
      const NodeId hooks = Reduce(g, hooks_cls, {});
      std::vector<NodeId> args = {pid, g.AddInt(offset), IntTuple(g, shape), IntTuple(g, stride), g.AddBool(false), hooks};
      if (untyped) args.push_back(g.AddGlobal("torch", torch::Info(dt).name));
      std::string tensor_name = std::to_string(name++);
      tensor_name.insert(tensor_name.begin(), 't');
      g.SetItem(root, g.AddStr(tensor_name), Reduce(g, untyped ? v3 : v2, args));
      named = true;
    }
    if (named) records.push_back({key, numel * sitem});
  }
  const Bytes pkl = pickle::Encode(g, root).value();
  const Bytes version = testing::Text("3\n");
  const torch::ExtraRecord extras[] = {{"version", version}};
  torch::ArchiveContents contents;
  contents.top_folder = "archive";
  contents.data_pkl = pkl;
  contents.storages = records;
  contents.extras = extras;
  io::MemSink sink("in.pt");
  const Status written = torch::WriteTorchArchive(
      contents,
      [&](size_t index, const torch::EmitBytes& emit) {
        Bytes b(static_cast<size_t>(records[index].nbytes));
        for (size_t i = 0; i < b.size(); ++i) b[i] = std::byte(static_cast<uint8_t>(i * 131 + index * 7 + 1));
        return emit(b);
      },
      &sink);
  REQUIRE_MESSAGE(written.ok(), written.ToString());
  return sink.bytes();
}

// The size of the output with every storage that has an unreferenced byte
// split into exactly sized storages (what a conversion writes), and the
// bound the rule promises on top of it: one record's overhead per storage
// kept whole.
struct SplitSize {
  uint64_t exact = 0;
  uint64_t allowance = 0;
};

SplitSize ExactSplit(const Bytes& archive) {
  io::MemSource src("in.pt", archive);
  torch::Checkpoint ckpt = torch::ReadCheckpoint(src).value();
  const std::string top = ckpt.top_folder;
  const plan::SplitCost cost(ckpt, top + "/data/");
  const plan::ShrinkPlan rule = plan::PlanShrink(ckpt, &cost).value();
  const plan::ShrinkPlan split = plan::PlanShrink(ckpt).value();
  SplitSize out;
  for (const plan::ShrinkPlan::KeptWhole& k : rule.kept_whole) {
    size_t parts = 0;
    for (const plan::OutputStorage& o : split.storages) parts += o.input_storage == k.input_storage;
    out.allowance += cost.RecordOverheadBound(ckpt.storages[k.input_storage].key.size() + 1 +
                                              std::to_string(parts).size());
  }
  std::vector<torch::NewStorage> storages;
  std::vector<torch::StorageRecord> records;
  for (const plan::OutputStorage& o : split.storages) {
    storages.push_back({o.key, o.nbytes(), o.input_storage});
    records.push_back({o.key, o.nbytes()});
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : split.views) placements.push_back({v.output_storage, v.storage_offset});
  REQUIRE(torch::RetargetTensors(ckpt, storages, placements).ok());
  const Bytes pkl = pickle::Encode(ckpt.graph, ckpt.root).value();
  const Bytes version = testing::Text("3\n");
  const torch::ExtraRecord extras[] = {{"version", version}};
  torch::ArchiveContents contents;
  contents.top_folder = top;
  contents.data_pkl = pkl;
  contents.storages = records;
  contents.extras = extras;
  out.exact = torch::TorchArchiveSize(contents);
  return out;
}

// Shrinks `archive` as a file, in place and as a stream; checks the rule's
// guarantees. Returns the file form's report.
ShrinkReport CheckRule(const Bytes& archive, bool check_split_bound) {
  io::MemEnv mem;
  mem.SetFile("in.pt", archive);
  Result<ShrinkReport> r = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  const Bytes out = mem.GetFile("out.pt").value();
  CHECK_EQ(r->output_file_bytes, out.size());
  CHECK_LE(out.size(), archive.size());
  CHECK_EQ(r->copied_unchanged, out == archive);
  if (check_split_bound) {
    const SplitSize split = ExactSplit(archive);
    CHECK_LE(out.size(), split.exact + split.allowance);
  }
  // Every tensor reads the same bytes.
  io::MemSource in_src("in.pt", archive), out_src("out.pt", out);
  Result<verify::VerifyReport> v = verify::VerifyWritten(in_src, out_src, {});
  CHECK_MESSAGE(v.ok(), v.status().ToString());
  // In place: the same bytes, or the input left as it is.
  const uint64_t id = mem.FileId("in.pt");
  REQUIRE(ShrinkFile(&mem, "in.pt", "in.pt", ShrinkOptions{}).ok());
  CHECK(mem.GetFile("in.pt").value() == out);
  CHECK_EQ(mem.FileId("in.pt") == id, r->copied_unchanged);
  // One forward pass decides alike for archives laid out as torch writes them.
  io::MemStreamSource stream("<stdin>", archive, 1000);
  io::MemSink sink("out.pt");
  Result<ShrinkReport> s = ShrinkStreamTo(&stream, &sink, "out.pt", ShrinkOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(sink.bytes() == out);
  CHECK_EQ(s->copied_unchanged, r->copied_unchanged);
  return *r;
}

TEST_CASE("random view layouts: never larger than the input, within a record per kept storage of exact splitting") {
  std::mt19937 rng(12);
  size_t copied = 0, kept = 0, changed = 0;
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    const Bytes archive = RandomArchive(rng);
    ShrinkReport r = CheckRule(archive, true);
    copied += r.copied_unchanged;
    kept += r.kept_whole.size();
    changed += r.changed_storages.size();
  }
  // The layouts reach every outcome.
  CHECK_GT(copied, 10u);
  CHECK_GT(kept, 10u);
  CHECK_GT(changed, 10u);
}

TEST_CASE("the split decision follows the real size difference but for the padding next to the storage") {
  // One storage: the whole rewrite is the input (torch's layout, our
  // encoder's pickle), the exactly split one ExactSplit's. SplitCost is
  // exact but for the padding before the storage's first record and after
  // its last (at most 63 bytes each) and memo widths (none below 256
  // nodes): past that margin, the rule decides as the sizes do.
  constexpr int64_t kMargin = 2 * 63;
  std::mt19937 rng(34);
  size_t split = 0, kept = 0;
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    const Bytes archive = RandomArchive(rng, 1);
    io::MemEnv mem;
    mem.SetFile("in.pt", archive);
    ShrinkOptions dry;
    dry.dry_run = true;
    const ShrinkReport r = ShrinkFile(&mem, "in.pt", "out.pt", dry).value();
    const int64_t gain = static_cast<int64_t>(ExactSplit(archive).exact) - static_cast<int64_t>(archive.size());
    CAPTURE(gain);
    if (gain < -kMargin) CHECK_EQ(r.changed_storages.size(), 1u);
    if (gain > kMargin) CHECK(r.changed_storages.empty());
    split += !r.changed_storages.empty();
    kept += !r.kept_whole.empty();
  }
  CHECK_GT(split, 10u);
  CHECK_GT(kept, 10u);
}

TEST_CASE("every checkpoint fixture: never larger, tensors unchanged, the stream form alike") {
  const char* const kFiles[] = {
      "torch/views.pt", "torch/scalars_empty.pt", "torch/state_dict.pt", "torch/legacy_views_tied.pt",
      "torch/legacy_dtypes.pt", "torch/legacy_state_dict.pt", "torch/zip_rewritten.pt", "torch/tied_weights.pt",
      "torch/transposed_expand.pt", "torch/dtypes.pt", "torch/optimizer_state.pt",
      "hf/bloated/pytorch_model-00001-of-00003.bin", "deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin",
      "deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00001-of-00003.bin",
      "deepspeed/zero3_ws3_fp16/ckpt/global_step2/zero_pp_rank_0_mp_rank_00_model_states.pt"};
  for (const char* name : kFiles) {
    CAPTURE(std::string(name));
    CheckRule(testing::Fixture(name), false);
  }
  // Nothing to reclaim in a legacy file: its zip form would be larger.
  io::MemEnv mem;
  mem.SetFile("in.pt", testing::Fixture("torch/legacy_state_dict.pt"));
  ShrinkReport r = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{}).value();
  CHECK(r.copied_unchanged);
  // The bloated DeepSpeed pytorch_model.bin: 4 bytes of alignment gaps in a
  // flat buffer of 27 views; splitting it would add about 3.4 KB of records.
  mem.SetFile("in.pt", testing::Fixture("deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin"));
  r = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{}).value();
  CHECK(r.copied_unchanged);
  CHECK_EQ(r.kept_whole, std::vector<std::string>{"2: kept whole: 4 B unreferenced, less than splitting costs"});
}

}  // namespace
}  // namespace zerofold::rewrite
