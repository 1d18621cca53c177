// What `zerofold inspect` shows of a Distributed Checkpoint folder, from
// its metadata alone (no chunk is read): every tensor key with dtype,
// global shape, chunk count and the files holding its chunks; the
// non-tensor keys; tensor bytes per group (model weights vs the
// training-state groups, dcp/plan.h).
#ifndef ZEROFOLD_DCP_LISTING_H_
#define ZEROFOLD_DCP_LISTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dcp/folder.h"
#include "dcp/metadata.h"
#include "json/writer.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

struct KeyListing {
  std::string key;
  std::string dtype;
  std::vector<int64_t> shape;
  size_t chunks = 0;
  std::vector<std::string> files;  // relative paths, first-use order
  uint64_t nbytes = 0;             // numel x itemsize, saturating
};

struct GroupTotal {
  std::string group;  // "model", or a training-state group ("optimizer")
  size_t tensors = 0;
  uint64_t nbytes = 0;
};

struct Listing {
  std::string path;                // the DCP folder
  bool safetensors_form = false;
  bool schema_2x = false;
  std::string version;
  std::vector<KeyListing> tensors;         // .metadata order
  std::vector<std::string> non_tensor;     // BytesStorageMetadata keys
  std::vector<GroupTotal> groups;          // "model" first, then first-seen order
  std::vector<std::string> files;          // every file storage_data names
  uint64_t tensor_bytes = 0;
};

Listing ListMetadata(const DcpFolder& folder, const Metadata& md);

// The listing of `path` when it is a DCP folder (FindDcpFolder), nullopt
// when it is none; errors of LoadMetadata.
Result<std::optional<Listing>> ListDcpPath(Env* env, const std::string& path, const torch::ReadOptions& read);

// {"path":..., "format":"dcp", "layout":"torch 1.13"|"torch 2.x"|"safetensors",
//  "version":..., "tensors":[{"key","dtype","shape","chunks","files","nbytes"}],
//  "non_tensor":[{"key"}], "groups":[{"group","tensors","nbytes"}],
//  "data_files":[...], "tensor_bytes":N}: an element of inspect's "files".
void WriteListingJson(json::Writer& w, const Listing& l);

// The members of that object after "path" and "format", for a caller
// that writes its own object around them (megatron/inspect.h).
void WriteListingFields(json::Writer& w, const Listing& l);

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_LISTING_H_
