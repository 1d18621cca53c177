// Test helper: writes a DCP `.metadata` pickle as torch's writers lay it
// out (NEWOBJ of the class on an empty tuple, BUILD with a dict of fields;
// TensorProperties BUILD with its 5-tuple state), in the 1.13 or the 2.x
// module layout, for cases no torch here can write.
#ifndef ZEROFOLD_TESTS_DCP_METADATA_BUILDER_H_
#define ZEROFOLD_TESTS_DCP_METADATA_BUILDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../torch/pickle_writer.h"

namespace zerofold::dcp::testing {

using torch::testing::PickleWriter;

struct ChunkSpec {
  std::vector<int64_t> offsets, sizes;
  std::string file = "__0_0.distcp";
  int64_t offset = 0, length = 0;
  std::vector<std::string> transforms;
};

struct EntrySpec {
  std::string key;
  bool tensor = true;
  std::string dtype = "float32";
  std::vector<int64_t> size;
  std::vector<ChunkSpec> chunks;
};

struct Layout {
  bool v2 = false;            // torch.distributed.checkpoint module paths
  bool tp_in_meta2 = false;   // TensorProperties in ...checkpoint.metadata (2.4+)
  bool storage_meta = false;  // StorageMeta with a pathlib checkpoint_id, version "1.0.0"
  // Called after the state_dict_metadata field to add hostile content.
  std::function<void(PickleWriter&)> extra_field;
};

inline const char* MetaModule(const Layout& l) {
  return l.v2 ? "torch.distributed.checkpoint.metadata" : "torch.distributed._shard.checkpoint.metadata";
}

inline void Size(PickleWriter& w, const std::vector<int64_t>& v) {
  w.Global("torch", "Size").Mark();
  for (int64_t x : v) w.Int(x);
  w.Tuple().Tuple1().Reduce();
}

// Opens an object of `cls`: NEWOBJ, then MARK for its field dict.
inline void Begin(PickleWriter& w, const std::string& module, const std::string& cls) {
  w.Global(module, cls).EmptyTuple().NewObj().EmptyDict().Mark();
}
inline void End(PickleWriter& w) { w.SetItems().Build(); }

inline std::vector<std::byte> BuildMetadata(const std::vector<EntrySpec>& entries, const Layout& l = {}) {
  PickleWriter w;
  const std::string meta = MetaModule(l);
  const std::string fs = l.v2 ? "torch.distributed.checkpoint.filesystem" : "torch.distributed._shard.checkpoint.filesystem";
  const std::string tp = l.tp_in_meta2 ? meta : "torch.distributed._shard.sharded_tensor.metadata";
  const std::string en = l.tp_in_meta2 ? "_MEM_FORMAT_ENCODING" : "MEM_FORMAT_ENCODING";
  w.Proto(4);
  Begin(w, meta, "Metadata");
  w.Str("state_dict_metadata").EmptyDict().Mark();
  for (const EntrySpec& e : entries) {
    w.Str(e.key);
    if (!e.tensor) {
      w.Global(meta, "BytesStorageMetadata").EmptyTuple().NewObj().EmptyDict().Build();
      continue;
    }
    Begin(w, meta, "TensorStorageMetadata");
    w.Str("properties").Global(tp, "TensorProperties").EmptyTuple().NewObj();
    w.Mark().Global("torch", e.dtype).Global("torch.serialization", "_get_layout").Str("torch.strided").Tuple1().Reduce();
    w.Bool(false).Global("builtins", "getattr").Global(tp, en).Str("TORCH_CONTIGUOUS_FORMAT").Tuple2().Reduce();
    w.Bool(false).Tuple().Build();
    w.Str("size");
    Size(w, e.size);
    w.Str("chunks").EmptyList().Mark();
    for (const ChunkSpec& c : e.chunks) {
      Begin(w, meta, "ChunkStorageMetadata");
      w.Str("offsets");
      Size(w, c.offsets);
      w.Str("sizes");
      Size(w, c.sizes);
      End(w);
    }
    w.Appends();
    End(w);
  }
  w.SetItems();
  if (l.extra_field) l.extra_field(w);
  w.Str("planner_data").None();
  w.Str("storage_data").EmptyDict().Mark();
  for (const EntrySpec& e : entries) {
    std::vector<ChunkSpec> items = e.chunks;
    if (!e.tensor) items.push_back(ChunkSpec{{}, {}, "__0_0.distcp", 0, 0, {}});
    for (size_t i = 0; i < items.size(); ++i) {
      const ChunkSpec& c = items[i];
      Begin(w, meta, "MetadataIndex");
      w.Str("fqn").Str(e.key);
      if (e.tensor) {
        w.Str("offset");
        Size(w, c.offsets);
        w.Str("index").Int(static_cast<int64_t>(i));
      } else {
        w.Str("index").None();
      }
      End(w);
      Begin(w, fs, "_StorageInfo");
      w.Str("relative_path").Str(c.file).Str("offset").Int(c.offset).Str("length").Int(c.length);
      if (l.v2) {
        w.Str("transform_descriptors");
        if (c.transforms.empty()) {
          w.None();
        } else {
          w.EmptyList().Mark();
          for (const std::string& t : c.transforms) w.Str(t);
          w.Appends();
        }
      }
      End(w);
    }
  }
  w.SetItems();
  if (l.storage_meta) {
    w.Str("storage_meta");
    Begin(w, meta, "StorageMeta");
    w.Str("checkpoint_id").Global("pathlib", "PosixPath").Mark().Str("/").Str("ckpt").Tuple().Reduce();
    w.Str("save_id").Str("0b6f").Str("load_id").None().Str("modules").EmptyList();
    End(w);
    w.Str("version").Str("1.0.0");
  }
  End(w);
  w.Stop();
  return w.bytes();
}

}  // namespace zerofold::dcp::testing

#endif  // ZEROFOLD_TESTS_DCP_METADATA_BUILDER_H_
