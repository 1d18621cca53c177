// Finding and reading a PyTorch Distributed Checkpoint folder: the folder
// holding `.metadata` or the safetensors form's shards (given directly, or a
// training output folder holding Accelerate's `pytorch_model_fsdp_0/`),
// and its metadata.
#ifndef ZEROFOLD_DCP_FOLDER_H_
#define ZEROFOLD_DCP_FOLDER_H_

#include <optional>
#include <string>
#include <vector>

#include "dcp/metadata.h"
#include "pickle/decoder.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

// Accelerate's folder for an FSDP SHARDED_STATE_DICT model save.
inline constexpr const char* kAccelerateModelFolder = "pytorch_model_fsdp_0";

struct DcpFolder {
  std::string path;
  // The safetensors form's shard files (dcp/hf_form.h); empty: .metadata.
  std::vector<std::string> hf_shards;
};

// The DCP folder of `dir`: dir itself when it holds .metadata or
// safetensors-form shards, else dir/pytorch_model_fsdp_0 when that does;
// nullopt when neither (not a DCP checkpoint).
std::optional<DcpFolder> FindDcpFolder(Env* env, const std::string& dir);

// True when `dir` holds *.distcp files (a DCP folder, with or without its
// .metadata).
bool HoldsDistcpFiles(Env* env, const std::string& dir);

// Reads and interprets folder/.metadata (ReadMetadata), at most max_bytes
// of it (kLimit past that), or the safetensors form's headers (ReadHfForm).
// Errors carry the file's path.
Result<Metadata> LoadMetadata(Env* env, const DcpFolder& folder, uint64_t max_bytes,
                              const pickle::DecodeLimits& limits);

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_FOLDER_H_
