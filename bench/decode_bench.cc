// Benchmark: decoding the data.pkl of a checkpoint with many tensors.
//
// Builds, with zerofold's own graph and encoder, the pickle torch.save writes
// for an OrderedDict of N float32 tensors (each a _rebuild_tensor_v2 call on
// its own storage, as a state dict of N params), then times pickle::Decode
// and the tensor recognizer over it. Prints MB/s, tensors/s and the graph's
// memory per pickle byte. Usage: decode_bench [N=200000] [REPEATS=5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <algorithm>

#include "pickle/decoder.h"
#include "pickle/encoder.h"
#include "pickle/graph.h"
#include "torch/tensor_recognizer.h"

using namespace zerofold;

static std::vector<std::byte> BuildStateDictPickle(size_t n) {
  pickle::Graph g;
  pickle::NodeId od = g.AddGlobal("collections", "OrderedDict");
  pickle::NodeId empty = g.AddSequence(pickle::Kind::kTuple, {});
  pickle::ObjectData root_data;
  root_data.callable = od;
  root_data.args = empty;
  pickle::NodeId rebuild = g.AddGlobal("torch._utils", "_rebuild_tensor_v2");
  pickle::NodeId storage_tag = g.AddStr("storage");
  pickle::NodeId float_storage = g.AddGlobal("torch", "FloatStorage");
  pickle::NodeId cpu = g.AddStr("cpu");
  for (size_t i = 0; i < n; ++i) {
    int64_t rows = 64 + static_cast<int64_t>(i % 7), cols = 128;
    pickle::NodeId pid_items[5] = {storage_tag, float_storage, g.AddStr(std::to_string(i)), cpu, g.AddInt(rows * cols)};
    pickle::NodeId pid = g.AddPersId(g.AddSequence(pickle::Kind::kTuple, pid_items));
    pickle::NodeId size_items[2] = {g.AddInt(rows), g.AddInt(cols)};
    pickle::NodeId stride_items[2] = {g.AddInt(cols), g.AddInt(1)};
    pickle::ObjectData hooks;
    hooks.callable = od;
    hooks.args = empty;
    pickle::NodeId args[6] = {pid, g.AddInt(0), g.AddSequence(pickle::Kind::kTuple, size_items),
                              g.AddSequence(pickle::Kind::kTuple, stride_items), g.AddBool(false),
                              g.AddObject(std::move(hooks))};
    pickle::ObjectData t;
    t.callable = rebuild;
    t.args = g.AddSequence(pickle::Kind::kTuple, args);
    pickle::NodeId tensor = g.AddObject(std::move(t));
    root_data.dict_items.push_back(g.AddStr("model.layers." + std::to_string(i / 10) + ".mlp.w" + std::to_string(i % 10) + ".weight"));
    root_data.dict_items.push_back(tensor);
  }
  pickle::NodeId root = g.AddObject(std::move(root_data));
  Result<std::vector<std::byte>> bytes = pickle::Encode(g, root);
  if (!bytes.ok()) {
    std::fprintf(stderr, "encode failed: %s\n", bytes.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*bytes);
}

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<std::byte> pkl = BuildStateDictPickle(n);
  std::printf("pickle: %zu tensors, %.1f MB (%zu bytes per tensor)\n", n, pkl.size() / 1e6, pkl.size() / n);
  std::vector<double> decode_s, recognize_s;
  size_t graph_bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Result<pickle::Decoded> d = pickle::Decode(pkl, 0);
    auto t1 = std::chrono::steady_clock::now();
    if (!d.ok()) {
      std::fprintf(stderr, "decode failed: %s\n", d.status().ToString().c_str());
      return 1;
    }
    Result<torch::Recognized> rec = torch::RecognizeTensors(d->graph, d->root);
    auto t2 = std::chrono::steady_clock::now();
    if (!rec.ok() || rec->tensors.size() != n) {
      std::fprintf(stderr, "recognize failed\n");
      return 1;
    }
    graph_bytes = d->graph.ApproxBytes();
    decode_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    recognize_s.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  std::sort(decode_s.begin(), decode_s.end());
  std::sort(recognize_s.begin(), recognize_s.end());
  double dm = decode_s[decode_s.size() / 2], rm = recognize_s[recognize_s.size() / 2];
  std::printf("decode:    median %.3f s  %.0f MB/s  %.2f M tensors/s  (%d runs)\n", dm, pkl.size() / 1e6 / dm, n / 1e6 / dm,
              repeats);
  std::printf("recognize: median %.3f s  %.2f M tensors/s\n", rm, n / 1e6 / rm);
  std::printf("graph memory: %.1f MB = %.2f x the pickle bytes\n", graph_bytes / 1e6,
              static_cast<double>(graph_bytes) / static_cast<double>(pkl.size()));
  return 0;
}
