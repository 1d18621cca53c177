// Reading a checkpoint file of any format (torch zip, legacy, safetensors)
// into the checkpoint model (torch/checkpoint.h), so every writer and
// comparison works on one model whatever the input's format.
//
// A safetensors file becomes the model torch.save writes for the state dict
// safetensors.torch.load_file returns (merge/pickle.h): an OrderedDict
// of its tensors in name order (bytewise, as safe_open.keys() gives them),
// one storage per tensor keyed "0", "1", ... in that order, each view
// contiguous at offset 0. Storage::data_offset is the tensor's absolute
// offset in the file and Storage::record its name, so read errors name the
// tensor; Checkpoint::format is kTorchZip with no top folder and no other
// records (what such a torch.save would hold).
//
// A file written with --dedupe-tied records each dropped name in
// __metadata__[kTiedMetadataKey] as {"dropped": "kept", ...}: the dropped
// names are read back as tensors of their kept name's storage (tied: torch
// output holds one storage for both, diff compares the dropped name as its
// kept name), in name order with the others.
#ifndef ZEROFOLD_MODEL_CHECKPOINT_FILE_H_
#define ZEROFOLD_MODEL_CHECKPOINT_FILE_H_

#include <string>
#include <utility>
#include <vector>

#include "model/listing.h"
#include "safetensors/reader.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::model {

// __metadata__ key of the --dedupe-tied record. Persisted: never changes.
constexpr const char* kTiedMetadataKey = "zerofold.tied";

// Whether the pickle graph is built for a safetensors file. Writers of
// torch output and of re-selected trees need it; a reader of tensor bytes
// (diff) does not. Dtypes torch 1.13 has no storage class for (uint16/32/64,
// float8, float4_e2m1fn_x2) are written as torch >= 2.1 writes them
// (torch/state_dict.h).
enum class SafetensorsGraph : bool { kSkip, kBuild };

// What becomes of a safetensors tensor torch has no reading of (F6_*, F4 of
// rank 0 or odd last dimension): refused, or, for readers that only move or
// compare its bytes (safetensors output, diff), read as a uint8 tensor of
// shape [its bytes], its safetensors dtype and shape kept beside the model.
enum class TorchlessTensors : bool { kRefuse, kAsBytes };

struct TorchlessTensor {
  std::string name;
  safetensors::Dtype dtype = safetensors::Dtype::U8;
  std::vector<uint64_t> shape;
};

struct CheckpointFile {
  model::FileFormat format = model::FileFormat::kTorchZip;
  torch::Checkpoint ckpt;
  // With TorchlessTensors::kAsBytes: the tensors read as bytes, by name.
  std::vector<TorchlessTensor> torchless;
  // safetensors: the header's __metadata__, in header order; else empty.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The model of a safetensors file whose header is `file`, as above.
// Errors (record: the tensor's name): kUnsupported, with kRefuse, for a
// dtype torch has none for (F6_*) or an F4 tensor torch has no shape for
// (rank 0, odd last dimension); a dimension past 2^63 - 1; kCorrupt (record
// "__metadata__") for a kTiedMetadataKey entry that is no JSON object of
// names, names a kept tensor the file lacks, or drops one it holds.
// `torchless` receives the tensors read as bytes (kAsBytes).
Result<torch::Checkpoint> SafetensorsCheckpoint(const safetensors::File& file, SafetensorsGraph graph,
                                                TorchlessTensors mode = TorchlessTensors::kRefuse,
                                                std::vector<TorchlessTensor>* torchless = nullptr);

// Why torch has no reading of a safetensors tensor, for a one-line refusal:
// "dtype F6_E2M3 has no torch dtype", ...
std::string NoTorchView(const safetensors::TensorInfo& info);

// Reads `src` as the format its first bytes say (model::SniffFormat).
// Errors as torch::ReadCheckpoint's, safetensors::ReadHeader's and
// SafetensorsCheckpoint's; the caller adds the path.
Result<CheckpointFile> ReadCheckpointFile(const RandomSource& src, const torch::ReadOptions& options,
                                          SafetensorsGraph graph,
                                          TorchlessTensors torchless = TorchlessTensors::kRefuse);

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_CHECKPOINT_FILE_H_
