// Benchmark data for `zerofold shrink`: a bloated Hugging Face sharded
// checkpoint, written with zerofold's own pickle graph, encoder and torch
// archive writer, as transformers' save_pretrained writes one when every
// param is a view into one flat 16-bit buffer (DeepSpeed ZeRO-1/2, FSDP
// flat params): torch.save of each shard's dict saves the whole flat
// storage, so every shard file carries all of it.
//   OUT/pytorch_model-0000K-of-0000S.bin   {name: view} for the shard's names,
//                                          one storage "0": the whole buffer
//   OUT/pytorch_model.bin.index.json       metadata.total_size, weight_map
//   OUT/config.json                        a small file shrink copies
// Params in flat order: model.embed_tokens.weight [LARGEST / 8 KiB, 4096]
// (LARGEST bytes of 16-bit values, by default exactly 1 GiB), LAYERS x
// (model.layers.I.weight [ROWS, 4096], model.layers.I.bias [4097]),
// model.norm.weight [4095]: 2 x LAYERS + 2 tensors at every SIZE. The layers
// share max(SIZE - LARGEST, LARGEST / 8) bytes, so the params total about
// SIZE for SIZE >= 1.125 x LARGEST and 1.125 x LARGEST below. Odd
// sizes put most views at offsets that are not 64-byte aligned. The buffer
// ends with padding to a multiple of 2 MiB that no view references.
// A tensor goes into shard floor(its offset x SHARDS / params bytes).
// Values: finite pseudo-random 16-bit floats, a 4 MiB pattern whose first
// 64 bytes carry the chunk's number; deterministic, so every shard carries
// the same bytes, as the real bloat does. Bytes are streamed in 4 MiB chunks.
//
// usage: shrink_gen OUT_DIR SIZE_BYTES [SHARDS=2] [LAYERS=30] [DTYPE=bfloat16|float16]
//                   [LARGEST_BYTES=1073741824]
// Prints a JSON summary on stdout.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int64_t kHidden = 4096;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "shrink_gen: %s\n", message.c_str());
  std::exit(1);
}
[[noreturn]] void Die(const Status& s) { Die(s.ToString()); }

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // elements into the flat buffer
  uint64_t numel() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
  }
};

// The flat buffer's bytes: `nbytes` of a pattern of finite 16-bit floats
// (bfloat16 or float16 bits with exponent bits kept clear of inf/NaN).
class Pattern {
 public:
  explicit Pattern(DType dtype) : base_(kChunk) {
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 2 <= base_.size(); i += 2) {
      state ^= state >> 12;  // xorshift64*
      state ^= state << 25;
      state ^= state >> 27;
      uint16_t r = static_cast<uint16_t>((state * 0x2545F4914F6CDD1Dull) >> 48);
      // bfloat16: sign, exponent 0x3C..0x3F (about 2^-3 .. 1), 7 mantissa
      // bits. float16: sign, exponent 12..15, 10 mantissa bits.
      uint16_t v = dtype == DType::kBFloat16 ? static_cast<uint16_t>((r & 0x81FF) | 0x3E00)
                                             : static_cast<uint16_t>((r & 0x8FFF) | 0x3000);
      base_[i] = static_cast<std::byte>(v & 0xFF);
      base_[i + 1] = static_cast<std::byte>(v >> 8);
    }
    chunk_ = base_;
  }

  Status Emit(uint64_t nbytes, const torch::EmitBytes& emit) {
    uint64_t done = 0;
    for (uint64_t c = 0; done < nbytes; ++c) {
      // The first 32 values of chunk c: c's bytes in the mantissa bits.
      for (size_t i = 0; i < 64; i += 2) {
        uint8_t b = static_cast<uint8_t>((c >> (8 * ((i / 2) % 8))) & 0x7F);
        chunk_[i] = static_cast<std::byte>(static_cast<uint8_t>(base_[i]) ^ b);
      }
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_.size(), nbytes - done));
      ZF_TRY(emit(std::span<const std::byte>(chunk_.data(), n)));
      done += n;
    }
    return Status::OK();
  }

 private:
  std::vector<std::byte> base_;
  std::vector<std::byte> chunk_;
};

// One shard: a dict {name: view} of views into storage "0".
std::vector<std::byte> ShardPickle(const std::vector<const Param*>& params, DType dtype, uint64_t buffer_numel) {
  pickle::Graph g;
  NodeId rebuild = g.AddGlobal("torch._utils", "_rebuild_tensor_v2");
  NodeId ordered_dict = g.AddGlobal("collections", "OrderedDict");
  NodeId storage = g.AddStr("storage");
  NodeId cls = g.AddGlobal("torch", torch::Info(dtype).storage_class);
  NodeId key = g.AddStr("0");
  NodeId cpu = g.AddStr("cpu");
  auto tuple = [&](const std::vector<NodeId>& items) { return g.AddSequence(Kind::kTuple, items); };
  auto ints = [&](const std::vector<int64_t>& v) {
    std::vector<NodeId> items;
    for (int64_t x : v) items.push_back(g.AddInt(x));
    return tuple(items);
  };
  auto reduce = [&](NodeId callable, NodeId args) {
    pickle::ObjectData o;
    o.callable = callable;
    o.args = args;
    return g.AddObject(std::move(o));
  };
  NodeId root = g.AddDict();
  for (const Param* p : params) {
    std::vector<int64_t> stride(p->shape.size(), 1);
    for (size_t i = p->shape.size(); i-- > 1;) stride[i - 1] = stride[i] * p->shape[i];
    // torch.save writes a new persistent-id tuple per tensor; the key string
    // and the storage class are the memoized same objects.
    NodeId pid = g.AddPersId(tuple({storage, cls, key, cpu, g.AddInt(static_cast<int64_t>(buffer_numel))}));
    NodeId args = tuple({pid, g.AddInt(static_cast<int64_t>(p->offset)), ints(p->shape), ints(stride),
                         g.AddBool(false), reduce(ordered_dict, tuple({}))});
    g.SetItem(root, g.AddStr(p->name), reduce(rebuild, args));
  }
  Result<std::vector<std::byte>> pkl = pickle::Encode(g, root);
  if (!pkl.ok()) Die(pkl.status());
  return std::move(*pkl);
}

void WriteText(Env* env, const std::string& path, const std::string& text) {
  Result<std::unique_ptr<AtomicFileSink>> sink = env->NewAtomicFile(path);
  if (!sink.ok()) Die(sink.status());
  if (Status s = (*sink)->Append(std::as_bytes(std::span<const char>(text.data(), text.size()))); !s.ok()) Die(s);
  if (Status s = (*sink)->Commit(); !s.ok()) Die(s);
}

std::string ShardName(int k, int shards) {
  char name[64];
  std::snprintf(name, sizeof name, "pytorch_model-%05d-of-%05d.bin", k + 1, shards);
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: shrink_gen OUT_DIR SIZE_BYTES [SHARDS=2] [LAYERS=30] [DTYPE=bfloat16|float16] "
                         "[LARGEST_BYTES=1073741824]\n");
    return 2;
  }
  const std::string out = argv[1];
  const uint64_t size = std::strtoull(argv[2], nullptr, 10);
  const int shards = argc > 3 ? std::atoi(argv[3]) : 2;
  const int layers = argc > 4 ? std::atoi(argv[4]) : 30;
  const std::string dtype_name = argc > 5 ? argv[5] : "bfloat16";
  const uint64_t largest = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : kGiB;
  if (shards < 1 || shards > 99 || layers < 1) Die("SHARDS must be 1..99 and LAYERS >= 1");
  if (largest == 0 || largest % (2 * kHidden) != 0) Die("LARGEST_BYTES must be a positive multiple of 8192");
  DType dtype;
  if (dtype_name == "bfloat16") dtype = DType::kBFloat16;
  else if (dtype_name == "float16") dtype = DType::kFloat16;
  else Die("DTYPE must be bfloat16 or float16");
  const uint64_t itemsize = 2;

  // Params in flat order, each at the running offset.
  std::vector<Param> params;
  params.push_back({"model.embed_tokens.weight", {static_cast<int64_t>(largest / itemsize / kHidden), kHidden}});
  const uint64_t rest = std::max<uint64_t>(size > largest ? size - largest : 0, largest / 8);
  const int64_t bias = kHidden + 1, norm = kHidden - 1;
  const uint64_t per_layer = rest / static_cast<uint64_t>(layers);
  const int64_t rows = static_cast<int64_t>((per_layer - static_cast<uint64_t>(bias) * itemsize) / itemsize / kHidden);
  if (rows < 1) Die("SIZE too small for LAYERS");
  for (int i = 0; i < layers; ++i) {
    params.push_back({"model.layers." + std::to_string(i) + ".weight", {rows, kHidden}});
    params.push_back({"model.layers." + std::to_string(i) + ".bias", {bias}});
  }
  params.push_back({"model.norm.weight", {norm}});
  uint64_t numel = 0;
  for (Param& p : params) {
    p.offset = numel;
    numel += p.numel();
  }
  const uint64_t params_bytes = numel * itemsize;
  const uint64_t align = (uint64_t{2} << 20) / itemsize;
  const uint64_t buffer_numel = (numel + align - 1) / align * align;
  const uint64_t buffer_bytes = buffer_numel * itemsize;

  std::vector<std::vector<const Param*>> shard_params(static_cast<size_t>(shards));
  for (const Param& p : params) {
    size_t k = static_cast<size_t>(static_cast<unsigned __int128>(p.offset) * itemsize * shards / params_bytes);
    shard_params[k].push_back(&p);
  }
  for (int k = 0; k < shards; ++k)
    if (shard_params[k].empty()) Die("shard " + std::to_string(k + 1) + " gets no tensor; use fewer SHARDS or a larger SIZE");

  Env* env = Env::Default();
  if (Status s = env->CreateDirs(out); !s.ok()) Die(s);
  Pattern pattern(dtype);
  const torch::StorageRecord record{"0", buffer_bytes};
  const std::vector<torch::ExtraRecord> extras{{"version", {std::byte{'3'}, std::byte{'\n'}}}};
  uint64_t files_bytes = 0;
  std::map<std::string, std::string> weight_map;
  std::string shard_json;
  for (int k = 0; k < shards; ++k) {
    const std::string name = ShardName(k, shards);
    std::vector<std::byte> pkl = ShardPickle(shard_params[k], dtype, buffer_numel);
    torch::ArchiveContents c;
    c.top_folder = name.substr(0, name.size() - 4);
    c.data_pkl = pkl;
    c.storages = std::span<const torch::StorageRecord>(&record, 1);
    c.extras = extras;
    Result<std::unique_ptr<AtomicFileSink>> sink = env->NewAtomicFile(out + "/" + name);
    if (!sink.ok()) Die(sink.status());
    Status s = torch::WriteTorchArchive(
        c, [&](size_t, const torch::EmitBytes& emit) { return pattern.Emit(buffer_bytes, emit); }, sink->get());
    if (!s.ok()) Die(s);
    const uint64_t file_bytes = (*sink)->position();
    if (s = (*sink)->Commit(); !s.ok()) Die(s);
    files_bytes += file_bytes;
    uint64_t referenced = 0;
    for (const Param* p : shard_params[k]) {
      weight_map[p->name] = name;
      referenced += p->numel() * itemsize;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%s{\"file\": \"%s\", \"bytes\": %llu, \"tensors\": %zu, \"tensor_bytes\": %llu, "
                  "\"data_pkl_bytes\": %zu}", k ? ", " : "", name.c_str(), static_cast<unsigned long long>(file_bytes),
                  shard_params[k].size(), static_cast<unsigned long long>(referenced), pkl.size());
    shard_json += line;
  }

  // transformers writes the index with json.dumps(indent=2, sort_keys=True).
  std::string index = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(params_bytes) + "\n  },\n  \"weight_map\": {\n";
  size_t i = 0;
  for (const auto& [name, file] : weight_map)
    index += "    \"" + name + "\": \"" + file + "\"" + (++i < weight_map.size() ? ",\n" : "\n");
  index += "  }\n}\n";
  WriteText(env, out + "/pytorch_model.bin.index.json", index);
  WriteText(env, out + "/config.json",
            "{\n  \"architectures\": [\"ShrinkBenchModel\"],\n  \"hidden_size\": 4096,\n  \"num_hidden_layers\": " +
                std::to_string(layers) + ",\n  \"torch_dtype\": \"" + dtype_name + "\"\n}\n");

  std::printf("{\"dtype\": \"%s\", \"shards\": %d, \"tensors\": %zu, \"layers\": %d, \"layer_rows\": %lld, "
              "\"largest_tensor_bytes\": %llu, \"params_bytes\": %llu, \"buffer_bytes\": %llu, \"files_bytes\": %llu, "
              "\"shard_files\": [%s]}\n",
              dtype_name.c_str(), shards, params.size(), layers, static_cast<long long>(rows),
              static_cast<unsigned long long>(params[0].numel() * itemsize), static_cast<unsigned long long>(params_bytes),
              static_cast<unsigned long long>(buffer_bytes), static_cast<unsigned long long>(files_bytes),
              shard_json.c_str());
  return 0;
}
