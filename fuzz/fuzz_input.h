// What every fuzz target shares: the input as bytes, and as a file or a pipe
// of an in-memory Env (the seam the readers take), plus the small limits that
// keep one input's work bounded. Header-only; targets include it.
//
// A target is fuzz/<name>_fuzz.cc defining LLVMFuzzerTestOneInput; its
// `// fuzz-seeds:` line lists fixture globs whose files seed its corpus,
// `// fuzz-seeds-pickle:` globs of torch zip files whose data.pkl does
// (fuzz/collect_seeds.py). A property a target checks beyond "no crash"
// fails with abort(), which libFuzzer keeps as a crash.
#ifndef ZEROFOLD_FUZZ_FUZZ_INPUT_H_
#define ZEROFOLD_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/mem_env.h"
#include "pickle/decoder.h"
#include "torch/checkpoint.h"
#include "torch/tensor_recognizer.h"
#include "zerofold/env.h"

namespace zerofold::fuzz {

// Bytes a target reads whole into memory (records, pickles): more is the
// reader's kLimit, which keeps each run fast.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 20;
// Bytes a target reads from a stream at a time.
constexpr size_t kReadChunk = 4096;

inline std::span<const std::byte> Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// The torch readers' options, with pickles capped at kMaxRecordBytes.
inline torch::ReadOptions TorchOptions() {
  torch::ReadOptions options;
  options.max_pickle_bytes = kMaxRecordBytes;
  return options;
}

// The checkpoint model of a decoded pickle, as ReadCheckpoint builds it for
// a zip archive, but for the storages' records: record_size is left 0.
inline Result<torch::Checkpoint> ModelOf(pickle::Decoded d) {
  ZF_ASSIGN_OR_RETURN(torch::Recognized r, torch::RecognizeTensors(d.graph, d.root));
  torch::Checkpoint ckpt;
  ckpt.graph = std::move(d.graph);
  ckpt.root = d.root;
  ckpt.storages = std::move(r.storages);
  ckpt.tensors = std::move(r.tensors);
  return ckpt;
}

// Calls reader.Read(chunk) until it returns 0 or, in all, max_bytes or more:
// true then; false at the first error.
template <typename Reader>
bool ReadToEnd(Reader& reader, uint64_t max_bytes = UINT64_MAX) {
  std::vector<std::byte> chunk(kReadChunk);
  for (uint64_t total = 0; total < max_bytes;) {
    Result<size_t> n = reader.Read(chunk);
    if (!n.ok()) return false;
    if (*n == 0) break;
    total += *n;
  }
  return true;
}

// The input as the file "input" of a MemEnv.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) {
    env_.SetFile(kName, std::vector<std::byte>(Bytes(data, size).begin(), Bytes(data, size).end()));
  }
  // The file for positional reads; never fails for a file that exists.
  std::unique_ptr<RandomSource> Random() { return Must(env_.OpenRandom(kName)); }
  // The file as a pipe: forward reads only.
  std::unique_ptr<StreamSource> Stream() { return Must(env_.OpenStream(kName)); }
  // The Env holding the file, and its path there.
  io::MemEnv* env() { return &env_; }
  std::string path() const { return kName; }

 private:
  static constexpr const char* kName = "input";
  template <typename T>
  static T Must(Result<T> r) {
    if (!r.ok()) abort();
    return std::move(*r);
  }
  io::MemEnv env_;
};

}  // namespace zerofold::fuzz

#endif  // ZEROFOLD_FUZZ_FUZZ_INPUT_H_
