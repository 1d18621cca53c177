// Benchmark data: a synthetic DeepSpeed ZeRO-3 checkpoint, written with
// zerofold's own pickle graph, encoder and torch archive writer, laid out as
// DeepSpeed 0.14.5 saves one (see src/zero/README.md):
//   OUT/latest                                    "global_step1"
//   OUT/global_step1/zero_pp_rank_R_mp_rank_00_model_states.pt
//       module (zero-size placeholders for params, whole buffers),
//       param_shapes, frozen params and their fragments, shared_params
//   OUT/global_step1/zero_pp_rank_R_mp_rank_00_optim_states.pt
//       Adam moments (step, exp_avg, exp_avg_sq per sub-group), then the
//       fp32 master partition as fp32_flat_groups, one tensor per sub-group
// The model: embed.weight [ROWS, 1024] (>= 512 MiB of fp32 with the default
// ROWS) tied to lm_head.weight, LAYERS x (weight [2048, 4096], bias [4097]),
// norm.weight [1023], a frozen pos.weight [4096, 64], an int64 buffer
// pos_ids [4096]. Odd sizes leave padding in every rank's pieces. Sub-groups
// hold SUB_GROUP elements each (the last one the rest), so with the defaults
// embed.weight's piece (ROWS x 1024 / WS elements) crosses a sub-group
// boundary on every rank. Values are pseudo-random, finite, deterministic.
//
// usage: merge_gen OUT_DIR [LAYERS=28] [WS=4] [ROWS=140000] [SUB_GROUP=20000000]
// Defaults give about 1.51 GB of fp32 params, 4.54 GB of files.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pickle/encoder.h"
#include "pickle/graph.h"
#include "torch/archive_writer.h"
#include "torch/dtype.h"
#include "zerofold/env.h"

using namespace zerofold;
using pickle::Kind;
using pickle::NodeId;
using torch::DType;

namespace {

constexpr size_t kChunk = size_t{4} << 20;

[[noreturn]] void Die(const Status& s) {
  std::fprintf(stderr, "merge_gen: %s\n", s.ToString().c_str());
  std::exit(1);
}

// Deterministic pseudo-random float32 values in +-[0.5, 1), or a ramp of
// int64 for the buffer.
struct Fill {
  enum { kRandom, kRamp } kind = kRandom;
  uint64_t seed = 1;
};

void Generate(const Fill& fill, uint64_t nbytes, const torch::EmitBytes& emit) {
  std::vector<std::byte> buf(kChunk);
  uint64_t state = fill.seed * 0x9E3779B97F4A7C15ull + 1;
  uint64_t done = 0, counter = 0;
  while (done < nbytes) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), nbytes - done));
    if (fill.kind == Fill::kRamp) {
      for (size_t i = 0; i + 8 <= n; i += 8, ++counter)
        for (int b = 0; b < 8; ++b) buf[i + b] = static_cast<std::byte>((counter >> (8 * b)) & 0xFF);
    } else {
      for (size_t i = 0; i + 8 <= n; i += 8) {
        state ^= state >> 12;  // xorshift64*
        state ^= state << 25;
        state ^= state >> 27;
        uint64_t r = state * 0x2545F4914F6CDD1Dull;
        uint32_t lo = (static_cast<uint32_t>(r) & 0x807FFFFFu) | 0x3F000000u;
        uint32_t hi = (static_cast<uint32_t>(r >> 32) & 0x807FFFFFu) | 0x3F000000u;
        for (int b = 0; b < 4; ++b) {
          buf[i + b] = static_cast<std::byte>((lo >> (8 * b)) & 0xFF);
          buf[i + 4 + b] = static_cast<std::byte>((hi >> (8 * b)) & 0xFF);
        }
      }
    }
    Status s = emit(std::span<const std::byte>(buf.data(), n));
    if (!s.ok()) Die(s);
    done += n;
  }
}

// One torch file being built: its graph, storages and how to fill them.
class File {
 public:
  File() {
    ordered_dict_ = g_.AddGlobal("collections", "OrderedDict");
    rebuild_ = g_.AddGlobal("torch._utils", "_rebuild_tensor_v2");
    storage_ = g_.AddStr("storage");
    cpu_ = g_.AddStr("cpu");
    size_ = g_.AddGlobal("torch", "Size");
  }
  pickle::Graph& g() { return g_; }

  NodeId Tuple(const std::vector<NodeId>& items) { return g_.AddSequence(Kind::kTuple, items); }
  NodeId Ints(const std::vector<int64_t>& v) {
    std::vector<NodeId> items;
    for (int64_t x : v) items.push_back(g_.AddInt(x));
    return Tuple(items);
  }
  NodeId Reduce(NodeId callable, NodeId args) {
    pickle::ObjectData o;
    o.callable = callable;
    o.args = args;
    return g_.AddObject(std::move(o));
  }
  NodeId OrderedDict(const std::vector<std::pair<std::string, NodeId>>& items) {
    NodeId od = Reduce(ordered_dict_, Tuple({}));
    for (const auto& [k, v] : items) {
      g_.MutableObject(od).dict_items.push_back(g_.AddStr(k));
      g_.MutableObject(od).dict_items.push_back(v);
    }
    return od;
  }
  NodeId Dict(const std::vector<std::pair<std::string, NodeId>>& items) {
    NodeId d = g_.AddDict();
    for (const auto& [k, v] : items) g_.SetItem(d, g_.AddStr(k), v);
    return d;
  }
  NodeId Size(const std::vector<int64_t>& dims) { return Reduce(size_, Tuple({Ints(dims)})); }

  // A contiguous tensor on a storage of its own, filled by `fill`.
  NodeId Tensor(DType dtype, const std::vector<int64_t>& shape, Fill fill) {
    uint64_t numel = 1;
    for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * std::max<int64_t>(shape[i], 1);
    const torch::DTypeInfo& info = torch::Info(dtype);
    auto cls = classes_.find(dtype);
    if (cls == classes_.end()) cls = classes_.emplace(dtype, g_.AddGlobal("torch", info.storage_class)).first;
    std::string key = std::to_string(records_.size());
    records_.push_back({key, numel * info.itemsize});
    fills_.push_back(fill);
    NodeId pid = g_.AddPersId(Tuple({storage_, cls->second, g_.AddStr(key), cpu_, g_.AddInt(static_cast<int64_t>(numel))}));
    NodeId hooks = Reduce(ordered_dict_, Tuple({}));
    return Reduce(rebuild_, Tuple({pid, g_.AddInt(0), Ints(shape), Ints(stride), g_.AddBool(false), hooks}));
  }

  // Writes the archive; returns its size.
  uint64_t Write(Env* env, const std::string& path, const std::string& top, NodeId root) {
    Result<std::vector<std::byte>> pkl = pickle::Encode(g_, root);
    if (!pkl.ok()) Die(pkl.status());
    Result<std::unique_ptr<AtomicFileSink>> sink = env->NewAtomicFile(path);
    if (!sink.ok()) Die(sink.status());
    torch::ArchiveContents c;
    c.top_folder = top;
    c.data_pkl = *pkl;
    c.storages = records_;
    Status s = torch::WriteTorchArchive(
        c,
        [&](size_t index, const torch::EmitBytes& emit) {
          Generate(fills_[index], records_[index].nbytes, emit);
          return Status::OK();
        },
        sink->get());
    if (!s.ok()) Die(s);
    uint64_t size = (*sink)->position();
    s = (*sink)->Commit();
    if (!s.ok()) Die(s);
    return size;
  }

 private:
  pickle::Graph g_;
  NodeId ordered_dict_, rebuild_, storage_, cpu_, size_;
  std::map<DType, NodeId> classes_;
  std::vector<torch::StorageRecord> records_;
  std::vector<Fill> fills_;
};

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t numel() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
  }
};

uint64_t Ceil(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: merge_gen OUT_DIR [LAYERS=28] [WS=4] [ROWS=140000] [SUB_GROUP=20000000]\n");
    return 2;
  }
  const std::string out = argv[1];
  const int layers = argc > 2 ? std::atoi(argv[2]) : 28;
  const uint64_t ws = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4;
  const int64_t rows = argc > 4 ? std::atoll(argv[4]) : 140000;
  const uint64_t sub_group = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 20000000;
  const std::string tag = "global_step1";
  Env* env = Env::Default();
  Status s = env->CreateDirs(out + "/" + tag);
  if (!s.ok()) Die(s);

  // Param groups in flat order: weights, then biases and the norm.
  std::vector<std::vector<Param>> groups(2);
  groups[0].push_back({"embed.weight", {rows, 1024}});
  for (int i = 0; i < layers; ++i) groups[0].push_back({"layers." + std::to_string(i) + ".weight", {2048, 4096}});
  for (int i = 0; i < layers; ++i) groups[1].push_back({"layers." + std::to_string(i) + ".bias", {4097}});
  groups[1].push_back({"norm.weight", {1023}});
  const Param frozen{"pos.weight", {4096, 64}};
  const Param buffer{"pos_ids", {4096}};

  uint64_t per_rank = 0, params_bytes = 0;
  for (const auto& g : groups)
    for (const Param& p : g) {
      per_rank += Ceil(p.numel(), ws);
      params_bytes += p.numel() * 4;
    }
  std::vector<uint64_t> sub_groups;
  for (uint64_t left = per_rank; left > 0; left -= std::min(left, sub_group)) sub_groups.push_back(std::min(left, sub_group));

  uint64_t total_bytes = 0;
  for (uint64_t r = 0; r < ws; ++r) {
    // Model states.
    File m;
    std::vector<std::pair<std::string, NodeId>> module;
    NodeId embed = m.Tensor(DType::kFloat32, {0}, {});
    module.push_back({"embed.weight", embed});
    module.push_back({frozen.name, m.Tensor(DType::kFloat32, {0}, {})});
    module.push_back({buffer.name, m.Tensor(DType::kInt64, buffer.shape, Fill{Fill::kRamp, 0})});
    for (int i = 0; i < layers; ++i) {
      module.push_back({"layers." + std::to_string(i) + ".weight", m.Tensor(DType::kFloat32, {0}, {})});
      module.push_back({"layers." + std::to_string(i) + ".bias", m.Tensor(DType::kFloat32, {0}, {})});
    }
    module.push_back({"norm.weight", m.Tensor(DType::kFloat32, {0}, {})});
    module.push_back({"lm_head.weight", embed});  // one Parameter under two names
    std::vector<NodeId> shapes;
    for (const auto& g : groups) {
      std::vector<std::pair<std::string, NodeId>> entries;
      for (const Param& p : g) entries.push_back({p.name, m.Size(p.shape)});
      shapes.push_back(m.OrderedDict(entries));
    }
    NodeId fragment = m.Tensor(DType::kFloat32, {static_cast<int64_t>(Ceil(frozen.numel(), ws))}, Fill{Fill::kRandom, 1000 + r});
    NodeId shared = r == 0 ? m.Dict({{"lm_head.weight", m.g().AddStr("embed.weight")}}) : m.Dict({});
    NodeId root = m.Dict({
        {"module", m.OrderedDict(module)},
        {"buffer_names", m.g().AddSequence(Kind::kList, std::vector<NodeId>{m.g().AddStr(buffer.name)})},
        {"optimizer", m.g().AddNone()},
        {"param_shapes", m.g().AddSequence(Kind::kList, shapes)},
        {"frozen_param_shapes", m.OrderedDict({{frozen.name, m.Size(frozen.shape)}})},
        {"shared_params", shared},
        {"frozen_param_fragments", m.OrderedDict({{frozen.name, fragment}})},
        {"lr_scheduler", m.g().AddNone()},
        {"dp_world_size", m.g().AddInt(static_cast<int64_t>(ws))},
        {"mp_world_size", m.g().AddInt(1)},
        {"ds_version", m.g().AddStr("0.14.5")},
    });
    std::string stem = "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_model_states";
    total_bytes += m.Write(env, out + "/" + tag + "/" + stem + ".pt", stem, root);

    // Optim states: Adam moments first, as DeepSpeed's state_dict orders them.
    File o;
    std::vector<std::pair<NodeId, NodeId>> state;
    std::vector<NodeId> param_groups, flat;
    for (size_t g = 0; g < sub_groups.size(); ++g) {
      int64_t n = static_cast<int64_t>(sub_groups[g]);
      uint64_t seed = (r + 1) * 100 + g;
      NodeId moments = o.Dict({{"step", o.Tensor(DType::kFloat32, {}, Fill{Fill::kRandom, seed + 7})},
                               {"exp_avg", o.Tensor(DType::kFloat32, {n}, Fill{Fill::kRandom, seed + 11})},
                               {"exp_avg_sq", o.Tensor(DType::kFloat32, {n}, Fill{Fill::kRandom, seed + 13})}});
      state.push_back({o.g().AddInt(static_cast<int64_t>(g)), moments});
      param_groups.push_back(o.Dict({{"lr", o.g().AddFloat(0.01)},
                                     {"weight_decay", o.g().AddFloat(g == 0 ? 0.1 : 0.0)},
                                     {"params", o.g().AddSequence(Kind::kList, std::vector<NodeId>{o.g().AddInt(static_cast<int64_t>(g))})}}));
    }
    NodeId state_dict = o.g().AddDict();
    for (const auto& [k, v] : state) o.g().SetItem(state_dict, k, v);
    for (size_t g = 0; g < sub_groups.size(); ++g)
      flat.push_back(o.Tensor(DType::kFloat32, {static_cast<int64_t>(sub_groups[g])}, Fill{Fill::kRandom, (r + 1) * 1000003 + g}));
    NodeId zero_stage = o.Reduce(o.g().AddGlobal("deepspeed.runtime.zero.config", "ZeroStageEnum"), o.Tuple({o.g().AddInt(3)}));
    NodeId osd = o.Dict({
        {"zero_stage", zero_stage},
        {"loss_scaler", o.g().AddNone()},
        {"dynamic_loss_scale", o.g().AddBool(false)},
        {"overflow", o.g().AddBool(false)},
        {"partition_count", o.g().AddInt(static_cast<int64_t>(ws))},
        {"optimizer_state_dict", o.Dict({{"state", state_dict}, {"param_groups", o.g().AddSequence(Kind::kList, param_groups)}})},
        {"fp32_flat_groups", o.g().AddSequence(Kind::kList, flat)},
    });
    NodeId oroot = o.Dict({{"optimizer_state_dict", osd}, {"ds_config", o.Dict({})}, {"ds_version", o.g().AddStr("0.14.5")}});
    stem = "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states";
    total_bytes += o.Write(env, out + "/" + tag + "/" + stem + ".pt", stem, oroot);
  }
  Result<std::unique_ptr<AtomicFileSink>> latest = env->NewAtomicFile(out + "/latest");
  if (!latest.ok()) Die(latest.status());
  std::string_view text = "global_step1";
  if (Status a = (*latest)->Append(std::as_bytes(std::span<const char>(text.data(), text.size()))); !a.ok()) Die(a);
  if (Status c = (*latest)->Commit(); !c.ok()) Die(c);

  uint64_t embed_piece = Ceil(static_cast<uint64_t>(rows) * 1024, ws);
  std::printf("{\"world_size\": %llu, \"params_bytes\": %llu, \"files_bytes\": %llu, \"per_rank_elements\": %llu, "
              "\"sub_groups\": %zu, \"embed_piece_elements\": %llu, \"embed_crosses_sub_group\": %s}\n",
              static_cast<unsigned long long>(ws), static_cast<unsigned long long>(params_bytes),
              static_cast<unsigned long long>(total_bytes), static_cast<unsigned long long>(per_rank),
              sub_groups.size(), static_cast<unsigned long long>(embed_piece),
              embed_piece > sub_groups[0] ? "true" : "false");
  return 0;
}
