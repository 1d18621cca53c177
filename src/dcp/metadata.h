// Reading a PyTorch Distributed Checkpoint `.metadata` file: a plain pickle
// of `Metadata(state_dict_metadata, planner_data, storage_data[,
// storage_meta][, version])`, interpreted by its schema, never executed.
//
// Accepted module paths (torch/distributed/checkpoint/metadata.py and
// filesystem.py in 2.x; torch/distributed/_shard/checkpoint/* in 1.13):
//   Metadata, TensorStorageMetadata, ChunkStorageMetadata,
//   BytesStorageMetadata, MetadataIndex, StorageMeta:
//       torch.distributed._shard.checkpoint.metadata (1.13)
//       torch.distributed.checkpoint.metadata (2.x)
//   _StorageInfo: torch.distributed._shard.checkpoint.filesystem (1.13),
//       torch.distributed.checkpoint.filesystem (2.x)
//   TensorProperties and its memory-format enum:
//       torch.distributed._shard.sharded_tensor.metadata (1.13, early 2.x:
//       MEM_FORMAT_ENCODING), torch.distributed.checkpoint.metadata (later
//       2.x: _MEM_FORMAT_ENCODING)
//   and torch.Size, torch.<dtype>, torch.serialization._get_layout,
//   builtins.getattr (Python 3.11's enum members), collections.OrderedDict,
//   pathlib PosixPath (StorageMeta.checkpoint_id).
// Megatron-Core's torch_dist `.metadata` (megatron/ reads the rest of its
// folder) adds, to a root that may also be
// megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata (core
// 0.15), the fields `mcore_data` (a dict of dicts) and `all_local_plans`
// (a list of save plans). Inside those two subtrees only (nodes reached
// from the root through nothing else) the planner's dataclasses and enum
// are inert data too: torch.distributed.checkpoint.planner.{SavePlan,
// WriteItem, WriteItemType, TensorWriteData} and that module's
// MCoreSavePlan; anywhere else they are refused like any global.
// Every other global is refused (kUnsafe, naming it): nothing in a
// checkpoint's metadata needs one. builtins.getattr is accepted only as
// Python 3.11 pickles an enum member: on the memory-format enum (or
// WriteItemType inside those subtrees) and a name not starting with `_`. torch 1.12's older schema
// (ShardedTensorStorageMetadata, `storage_key` fields) is kUnsupported.
#ifndef ZEROFOLD_DCP_METADATA_H_
#define ZEROFOLD_DCP_METADATA_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pickle/decoder.h"
#include "torch/dtype.h"
#include "zerofold/result.h"

namespace zerofold::dcp {

// The metadata file's name in a DCP folder.
inline constexpr const char* kMetadataFile = ".metadata";

struct Chunk {
  std::vector<int64_t> offsets;  // in the global shape
  std::vector<int64_t> sizes;
};

// One key of state_dict_metadata.
struct Entry {
  std::string key;                 // the flattened key ("model.embed.weight")
  bool is_tensor = false;          // TensorStorageMetadata; else BytesStorageMetadata
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> size;       // global shape
  std::vector<Chunk> chunks;       // as listed (plan order, not offset order)
};

// One item of storage_data: where a chunk (or a bytes value) is stored.
struct StorageItem {
  std::string fqn;
  std::optional<std::vector<int64_t>> offset;  // the chunk's offsets; unset for bytes values
  std::optional<int64_t> index;                // the chunk's index hint
  std::string relative_path;                   // the .distcp file, relative to the folder
  uint64_t offset_in_file = 0;
  uint64_t length = 0;
  // The safetensors form (dcp/hf_form.h): [offset, offset + length) holds
  // the chunk's contiguous bytes themselves, not a torch.save archive.
  bool raw = false;
  // Set when offset or length is negative or past 64 bits: the planner
  // refuses the chunk, naming its file.
  std::string range_error;
  std::vector<std::string> transforms;         // transform_descriptors (2.x), e.g. "stream.zstd/1"
};

struct Metadata {
  std::vector<Entry> entries;        // state_dict_metadata in its order
  std::vector<StorageItem> storage;  // storage_data in its order
  std::string version;               // Metadata.version (2.4+), "" when absent
  bool schema_2x = false;            // torch.distributed.checkpoint module paths
  bool safetensors_form = false;     // read from the shards' headers (dcp/hf_form.h), no .metadata

  // Megatron-Core's additions, as read (see above); all unset for torch's own.
  bool mcore_metadata_root = false;  // the root is MCoreMetadata
  bool has_mcore_data = false;       // the root has a `mcore_data` field
  // mcore_data keys holding `nd_reformulated_orig_global_shape`, with it,
  // in mcore_data's order.
  std::vector<std::pair<std::string, std::vector<int64_t>>> nd_reformulated;
  size_t local_plans = 0;            // items of `all_local_plans`
  std::string local_plan_class;      // the first plan's class ("SavePlan", "MCoreSavePlan")
};

// Interprets `bytes` (the whole .metadata file). Errors (record
// ".metadata"; offset where the pickle decoder knows it):
//   kUnsafe       a global outside the schema (named in the message), a
//                 planner class outside mcore_data and all_local_plans;
//   kUnsupported  torch 1.12's schema;
//   kCorrupt      the decoder's errors; a root that is no Metadata; a field
//                 of the wrong type or shape
//                 (naming the key), a dtype torch has no name for, an
//                 nd_reformulated_orig_global_shape that is no int tuple;
//   kLimit        a decoder limit.
Result<Metadata> ReadMetadata(std::span<const std::byte> bytes, const pickle::DecodeLimits& limits = {});

}  // namespace zerofold::dcp

#endif  // ZEROFOLD_DCP_METADATA_H_
