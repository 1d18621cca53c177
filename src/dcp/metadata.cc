#include "dcp/metadata.h"

#include <string_view>
#include <utility>

#include "model/graph_children.h"
#include "torch/checkpoint.h"

namespace zerofold::dcp {

namespace {

using pickle::Graph;
using pickle::Kind;
using pickle::NodeId;
using pickle::kNoNode;

constexpr std::string_view kRecord = ".metadata";
constexpr std::string_view kMeta113 = "torch.distributed._shard.checkpoint.metadata";
constexpr std::string_view kMeta2 = "torch.distributed.checkpoint.metadata";
constexpr std::string_view kFs113 = "torch.distributed._shard.checkpoint.filesystem";
constexpr std::string_view kFs2 = "torch.distributed.checkpoint.filesystem";
constexpr std::string_view kShardMeta = "torch.distributed._shard.sharded_tensor.metadata";
// Megatron-Core's additions (megatron/README's format facts).
constexpr std::string_view kPlanner = "torch.distributed.checkpoint.planner";
constexpr std::string_view kMcoreTorch = "megatron.core.dist_checkpointing.strategies.torch";
constexpr std::string_view kMcoreRoot = "MCoreMetadata";
constexpr std::string_view kMcoreDataField = "mcore_data";
constexpr std::string_view kLocalPlansField = "all_local_plans";
constexpr std::string_view kNdShapeField = "nd_reformulated_orig_global_shape";

// torch 1.12's schema: ShardedTensorStorageMetadata, storage_key fields.
constexpr std::string_view kOldSchemaClass = "ShardedTensorStorageMetadata";
constexpr std::string_view kOldSchemaField = "storage_key";

bool IsMetaModule(std::string_view m) { return m == kMeta113 || m == kMeta2; }

bool AllowedGlobal(std::string_view module, std::string_view name) {
  if (IsMetaModule(module))
    return name == "Metadata" || name == "TensorStorageMetadata" || name == "ChunkStorageMetadata" ||
           name == "BytesStorageMetadata" || name == "MetadataIndex" || name == "StorageMeta" ||
           (module == kMeta2 && (name == "TensorProperties" || name == "_MEM_FORMAT_ENCODING"));
  if (module == kFs113 || module == kFs2) return name == "_StorageInfo";
  if (module == kShardMeta) return name == "TensorProperties" || name == "MEM_FORMAT_ENCODING";
  if (module == "torch") return name == "Size" || torch::FromName(name).has_value();
  if (module == "torch.serialization") return name == "_get_layout";
  if (module == "builtins") return name == "getattr";
  if (module == "collections") return name == "OrderedDict";
  if (module == "pathlib" || module == "pathlib._local") return name == "PosixPath" || name == "PurePosixPath";
  return false;
}

// The save planner's classes: data inside mcore_data and all_local_plans.
bool PlannerGlobal(std::string_view module, std::string_view name) {
  if (module == kPlanner)
    return name == "SavePlan" || name == "WriteItem" || name == "WriteItemType" || name == "TensorWriteData";
  return module == kMcoreTorch && name == "MCoreSavePlan";
}

bool IsEnumClass(const Graph& g, NodeId id, bool in_plans) {
  return g.IsGlobal(id, kShardMeta, "MEM_FORMAT_ENCODING") || g.IsGlobal(id, kMeta2, "_MEM_FORMAT_ENCODING") ||
         (in_plans && g.IsGlobal(id, kPlanner, "WriteItemType"));
}

std::string GlobalText(const Graph& g, NodeId id) {
  return std::string(g.GlobalModule(id)) + "." + std::string(g.GlobalName(id));
}

void AddOnce(std::string* list, const std::string& name) {
  if (list->find(name) == std::string::npos) *list += (list->empty() ? "" : ", ") + name;
}

Status Bad(std::string why) { return Status::Corrupt(std::move(why)).WithRecord(kRecord); }

class Interpreter {
 public:
  explicit Interpreter(const Graph& g) : g_(g) {}

  // Refuses every global outside the schema, the 1.12 schema, a planner
  // class outside the Megatron subtrees, and any getattr but on an enum.
  Status CheckGlobals(NodeId root) {
    MarkRegions(root);
    std::string unknown, misplaced;
    bool bad_getattr = false;
    for (NodeId id = 0; id < g_.size(); ++id) {
      const bool in_plans = region_[id] == Region::kPlans;
      if (g_.kind(id) == Kind::kGlobal) {
        std::string_view m = g_.GlobalModule(id), n = g_.GlobalName(id);
        if (n == kOldSchemaClass)
          return Status::Unsupported("torch 1.12's checkpoint schema (" + std::string(m) + "." + std::string(n) +
                                     "): re-save with torch >= 1.13")
              .WithRecord(kRecord);
        if (AllowedGlobal(m, n) || (in_plans && PlannerGlobal(m, n))) continue;
        if (region_[id] == Region::kRootClass && m == kMcoreTorch && n == kMcoreRoot) continue;
        AddOnce(PlannerGlobal(m, n) ? &misplaced : &unknown, GlobalText(g_, id));
      } else if (g_.kind(id) == Kind::kObject && g_.IsGlobal(g_.Object(id).callable, "builtins", "getattr")) {
        std::span<const NodeId> args = TupleItems(g_.Object(id).args);
        bad_getattr |= args.size() != 2 || !IsEnumClass(g_, args[0], in_plans) || g_.kind(args[1]) != Kind::kStr ||
                       g_.AsStr(args[1]).empty() || g_.AsStr(args[1])[0] == '_';
      }
    }
    if (!unknown.empty())
      return Status::Unsafe("pickle references globals outside the DCP metadata schema: " + unknown +
                            " (not executed)")
          .WithRecord(kRecord);
    if (!misplaced.empty())
      return Status::Unsafe("pickle references " + misplaced + " outside " + std::string(kMcoreDataField) + " and " +
                            std::string(kLocalPlansField) + ", the only places Megatron-Core stores save plans")
          .WithRecord(kRecord);
    if (bad_getattr)
      return Status::Unsafe("builtins.getattr on something other than a member of the metadata's enums")
          .WithRecord(kRecord);
    return Status::OK();
  }

  Result<Metadata> Read(NodeId root) {
    Metadata md;
    std::string_view module;
    md.mcore_metadata_root = IsMcoreRoot(root);
    if (md.mcore_metadata_root) {
      md.schema_2x = true;
    } else {
      ZF_ASSIGN_OR_RETURN(module, ClassModule(root, "Metadata"));
      if (!IsMetaModule(module))
        return Status::Unsupported("the pickle's root is no DCP Metadata").WithRecord(kRecord);
      md.schema_2x = module == kMeta2;
    }
    ZF_ASSIGN_OR_RETURN(Fields f, FieldsOf(root, "Metadata"));
    ZF_TRY(ReadMegatronFields(f, &md));
    NodeId sdm = f.Get("state_dict_metadata");
    NodeId sd = f.Get("storage_data");
    NodeId version = f.Get("version");
    if (version != kNoNode && g_.kind(version) == Kind::kStr) md.version = std::string(g_.AsStr(version));
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> items, DictItems(sdm, "state_dict_metadata"));
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      ZF_ASSIGN_OR_RETURN(std::string key, Str(items[i], "a state_dict_metadata key"));
      ZF_ASSIGN_OR_RETURN(Entry e, ReadEntry(key, items[i + 1]));
      md.entries.push_back(std::move(e));
    }
    ZF_ASSIGN_OR_RETURN(items, DictItems(sd, "storage_data"));
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      ZF_ASSIGN_OR_RETURN(StorageItem s, ReadStorageItem(items[i], items[i + 1]));
      md.storage.push_back(std::move(s));
    }
    return md;
  }

 private:
  // Where a node sits: reached from the root outside the Megatron subtrees
  // (or not at all: judged as strictly), only through them, or only as the
  // root's class.
  enum class Region : uint8_t { kSchema, kPlans, kRootClass };

  bool IsMcoreRoot(NodeId root) const {
    return root != kNoNode && g_.kind(root) == Kind::kObject && g_.IsGlobal(g_.Object(root).callable, kMcoreTorch, kMcoreRoot);
  }

  // The root's BUILD dict entries, flattened (none when it has no dict).
  std::vector<NodeId> RootStateEntries(NodeId root) const {
    std::vector<NodeId> out;
    if (root == kNoNode || g_.kind(root) != Kind::kObject) return out;
    NodeId state = g_.Object(root).state;
    if (state == kNoNode) return out;
    std::vector<NodeId> dicts;
    if (g_.kind(state) == Kind::kDict) dicts.push_back(state);
    if (g_.kind(state) == Kind::kTuple)
      for (NodeId d : g_.Items(state))
        if (g_.kind(d) == Kind::kDict) dicts.push_back(d);
    for (NodeId d : dicts)
      for (NodeId e : g_.Items(d)) out.push_back(e);
    return out;
  }

  // Fills region_: a walk from the root that does not enter the values of
  // the root's mcore_data and all_local_plans fields (nor the root's class)
  // marks kSchema; a walk from those values marks what it reaches besides
  // as kPlans. Both walks are iterative (no recursion on hostile depth).
  void MarkRegions(NodeId root) {
    region_.assign(g_.size(), Region::kSchema);
    if (root == kNoNode) return;
    std::vector<bool> seen(g_.size(), false);
    std::vector<NodeId> subtrees;
    std::vector<NodeId> stack;
    auto push = [&](NodeId n) {
      if (n != kNoNode && !seen[n]) {
        seen[n] = true;
        stack.push_back(n);
      }
    };
    // The root and its state dicts by hand: their fields are where the
    // subtrees hang.
    seen[root] = true;
    const pickle::ObjectData* ro = g_.kind(root) == Kind::kObject ? &g_.Object(root) : nullptr;
    NodeId root_class = ro ? ro->callable : kNoNode;
    const std::vector<NodeId> entries = RootStateEntries(root);
    if (ro) {
      for (NodeId c : {ro->args, ro->kwargs}) push(c);
      for (NodeId c : ro->list_items) push(c);
      for (NodeId c : ro->dict_items) push(c);
      NodeId state = ro->state;
      if (state != kNoNode && !seen[state]) {
        seen[state] = true;
        if (g_.kind(state) == Kind::kTuple)
          for (NodeId d : g_.Items(state))
            if (g_.kind(d) == Kind::kDict) seen[d] = true;
            else push(d);
        else if (g_.kind(state) != Kind::kDict) push(state);
      }
      for (size_t i = 0; i + 1 < entries.size(); i += 2) {
        push(entries[i]);
        const bool subtree = g_.kind(entries[i]) == Kind::kStr &&
                             (g_.AsStr(entries[i]) == kMcoreDataField || g_.AsStr(entries[i]) == kLocalPlansField);
        if (subtree) subtrees.push_back(entries[i + 1]);
        else push(entries[i + 1]);
      }
    } else {
      model::ForEachChild(g_, root, push);
    }
    while (!stack.empty()) {
      NodeId n = stack.back();
      stack.pop_back();
      model::ForEachChild(g_, n, push);
    }
    std::vector<bool> outside = seen;
    for (NodeId s : subtrees) push(s);
    while (!stack.empty()) {
      NodeId n = stack.back();
      stack.pop_back();
      model::ForEachChild(g_, n, push);
    }
    for (NodeId id = 0; id < g_.size(); ++id)
      if (seen[id] && !outside[id]) region_[id] = Region::kPlans;
    if (root_class != kNoNode && !outside[root_class] && !seen[root_class]) region_[root_class] = Region::kRootClass;
  }

  struct Fields {
    std::vector<std::pair<std::string_view, NodeId>> items;
    NodeId Get(std::string_view name) const {
      for (const auto& [k, v] : items)
        if (k == name) return v;
      return kNoNode;
    }
  };

  // mcore_data (nd_reformulated_orig_global_shape per key) and the count
  // and class of all_local_plans.
  Status ReadMegatronFields(const Fields& f, Metadata* md);

  std::span<const NodeId> TupleItems(NodeId id) const {
    if (id == kNoNode || (g_.kind(id) != Kind::kTuple && g_.kind(id) != Kind::kList)) return {};
    return g_.Items(id);
  }

  // The module of the object's class, which must be named `name`.
  Result<std::string_view> ClassModule(NodeId id, std::string_view name) {
    if (id == kNoNode || g_.kind(id) != Kind::kObject || g_.kind(g_.Object(id).callable) != Kind::kGlobal ||
        g_.GlobalName(g_.Object(id).callable) != name)
      return Bad("expected a " + std::string(name) + " object");
    return g_.GlobalModule(g_.Object(id).callable);
  }

  // The object's fields: its BUILD state, a dict, or (dict, slots dict).
  Result<Fields> FieldsOf(NodeId id, std::string_view what) {
    Fields f;
    NodeId state = g_.Object(id).state;
    if (state == kNoNode || g_.kind(state) == Kind::kNone) return f;
    std::vector<NodeId> dicts;
    if (g_.kind(state) == Kind::kDict) {
      dicts.push_back(state);
    } else if (g_.kind(state) == Kind::kTuple && g_.Items(state).size() == 2) {
      for (NodeId d : g_.Items(state))
        if (g_.kind(d) == Kind::kDict) dicts.push_back(d);
        else if (g_.kind(d) != Kind::kNone) return Bad(std::string(what) + " state is no dict");
    } else {
      return Bad(std::string(what) + " state is no dict");
    }
    for (NodeId d : dicts) {
      std::span<const NodeId> items = g_.Items(d);
      for (size_t i = 0; i + 1 < items.size(); i += 2) {
        if (g_.kind(items[i]) != Kind::kStr) return Bad(std::string(what) + " has a field name that is no string");
        if (g_.AsStr(items[i]) == kOldSchemaField)
          return Status::Unsupported("torch 1.12's checkpoint schema (" + std::string(what) +
                                     ".storage_key): re-save with torch >= 1.13")
              .WithRecord(kRecord);
        f.items.emplace_back(g_.AsStr(items[i]), items[i + 1]);
      }
    }
    return f;
  }

  Result<std::span<const NodeId>> DictItems(NodeId id, std::string_view what) {
    if (id != kNoNode && g_.kind(id) == Kind::kDict) return g_.Items(id);
    if (id != kNoNode && g_.kind(id) == Kind::kObject && g_.IsGlobal(g_.Object(id).callable, "collections", "OrderedDict"))
      return std::span<const NodeId>(g_.Object(id).dict_items);
    return Bad(std::string(what) + " is no dict");
  }

  Result<std::string> Str(NodeId id, std::string_view what) {
    if (id == kNoNode || g_.kind(id) != Kind::kStr) return Bad(std::string(what) + " is no string");
    return std::string(g_.AsStr(id));
  }

  Result<int64_t> NonNegative(NodeId id, std::string_view what) {
    if (id == kNoNode || g_.kind(id) != Kind::kInt || g_.AsInt(id) < 0)
      return Bad(std::string(what) + " is no non-negative int");
    return g_.AsInt(id);
  }

  // An offset or length in a file: an int, or a LONG beyond int64. One that
  // is negative or past 64 bits sets *error (the planner names the file).
  Result<uint64_t> FileRange(NodeId id, std::string_view what, std::string* error) {
    if (id != kNoNode && g_.kind(id) == Kind::kInt) {
      if (g_.AsInt(id) >= 0) return static_cast<uint64_t>(g_.AsInt(id));
      if (error->empty()) *error = std::string(what) + " " + std::to_string(g_.AsInt(id)) + " is negative";
      return uint64_t{0};
    }
    if (id != kNoNode && g_.kind(id) == Kind::kBigInt) {
      std::string_view le = g_.AsStr(id);  // two's complement, little-endian
      bool negative = !le.empty() && (static_cast<unsigned char>(le.back()) & 0x80) != 0;
      while (!le.empty() && le.back() == '\0') le.remove_suffix(1);
      if (!negative && le.size() <= 8) {
        uint64_t v = 0;
        for (size_t i = le.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(le[i]);
        return v;
      }
      if (error->empty()) *error = std::string(what) + (negative ? " is negative" : " does not fit in 64 bits");
      return uint64_t{0};
    }
    return Bad(std::string("_StorageInfo.") + std::string(what) + " is no int");
  }

  // A torch.Size (REDUCE of torch.Size on a tuple of ints), or a tuple or
  // list of non-negative ints.
  Result<std::vector<int64_t>> Ints(NodeId id, std::string_view what) {
    if (id != kNoNode && g_.kind(id) == Kind::kObject && g_.IsGlobal(g_.Object(id).callable, "torch", "Size")) {
      std::span<const NodeId> args = TupleItems(g_.Object(id).args);
      if (args.size() != 1) return Bad(std::string(what) + ": torch.Size takes one tuple");
      id = args[0];
    }
    if (id == kNoNode || (g_.kind(id) != Kind::kTuple && g_.kind(id) != Kind::kList))
      return Bad(std::string(what) + " is no torch.Size");
    std::vector<int64_t> out;
    for (NodeId v : g_.Items(id)) {
      ZF_ASSIGN_OR_RETURN(int64_t n, NonNegative(v, what));
      out.push_back(n);
    }
    return out;
  }

  Result<torch::DType> DTypeOf(NodeId properties, const std::string& key) {
    ZF_ASSIGN_OR_RETURN(std::string_view module, ClassModule(properties, "TensorProperties"));
    (void)module;
    NodeId state = g_.Object(properties).state;
    NodeId dtype = kNoNode;
    if (state != kNoNode && g_.kind(state) == Kind::kTuple && !g_.Items(state).empty()) {
      dtype = g_.Items(state)[0];  // (dtype, layout, requires_grad, memory_format, pin_memory)
    } else {
      ZF_ASSIGN_OR_RETURN(Fields f, FieldsOf(properties, "TensorProperties"));
      dtype = f.Get("dtype");
    }
    if (dtype == kNoNode || g_.kind(dtype) != Kind::kGlobal || g_.GlobalModule(dtype) != "torch")
      return Bad(key + ": TensorProperties holds no torch dtype");
    std::optional<torch::DType> d = torch::FromName(g_.GlobalName(dtype));
    if (!d) return Bad(key + ": unknown dtype torch." + std::string(g_.GlobalName(dtype)));
    return *d;
  }

  Result<Entry> ReadEntry(const std::string& key, NodeId id) {
    Entry e;
    e.key = key;
    if (id == kNoNode || g_.kind(id) != Kind::kObject || g_.kind(g_.Object(id).callable) != Kind::kGlobal)
      return Bad(key + ": no storage metadata object");
    std::string_view cls = g_.GlobalName(g_.Object(id).callable);
    ZF_ASSIGN_OR_RETURN(Fields f, FieldsOf(id, cls));
    if (cls == "BytesStorageMetadata") return e;
    if (cls != "TensorStorageMetadata") return Bad(key + ": " + std::string(cls) + " is no storage metadata");
    e.is_tensor = true;
    ZF_ASSIGN_OR_RETURN(e.dtype, DTypeOf(f.Get("properties"), key));
    ZF_ASSIGN_OR_RETURN(e.size, Ints(f.Get("size"), key + ": size"));
    NodeId chunks = f.Get("chunks");
    if (chunks == kNoNode || g_.kind(chunks) != Kind::kList) return Bad(key + ": chunks is no list");
    for (NodeId c : g_.Items(chunks)) {
      ZF_TRY(ClassModule(c, "ChunkStorageMetadata").status());
      ZF_ASSIGN_OR_RETURN(Fields cf, FieldsOf(c, "ChunkStorageMetadata"));
      Chunk chunk;
      ZF_ASSIGN_OR_RETURN(chunk.offsets, Ints(cf.Get("offsets"), key + ": chunk offsets"));
      ZF_ASSIGN_OR_RETURN(chunk.sizes, Ints(cf.Get("sizes"), key + ": chunk sizes"));
      e.chunks.push_back(std::move(chunk));
    }
    return e;
  }

  Result<StorageItem> ReadStorageItem(NodeId index, NodeId info) {
    StorageItem s;
    ZF_TRY(ClassModule(index, "MetadataIndex").status());
    ZF_ASSIGN_OR_RETURN(Fields fi, FieldsOf(index, "MetadataIndex"));
    ZF_ASSIGN_OR_RETURN(s.fqn, Str(fi.Get("fqn"), "MetadataIndex.fqn"));
    NodeId offset = fi.Get("offset");
    if (offset != kNoNode && g_.kind(offset) != Kind::kNone) {
      ZF_ASSIGN_OR_RETURN(std::vector<int64_t> o, Ints(offset, s.fqn + ": MetadataIndex.offset"));
      s.offset = std::move(o);
    }
    NodeId hint = fi.Get("index");
    if (hint != kNoNode && g_.kind(hint) == Kind::kInt) s.index = g_.AsInt(hint);
    ZF_TRY(ClassModule(info, "_StorageInfo").status());
    ZF_ASSIGN_OR_RETURN(Fields fs, FieldsOf(info, "_StorageInfo"));
    ZF_ASSIGN_OR_RETURN(s.relative_path, Str(fs.Get("relative_path"), s.fqn + ": _StorageInfo.relative_path"));
    ZF_ASSIGN_OR_RETURN(s.offset_in_file, FileRange(fs.Get("offset"), "offset", &s.range_error));
    ZF_ASSIGN_OR_RETURN(s.length, FileRange(fs.Get("length"), "length", &s.range_error));
    NodeId td = fs.Get("transform_descriptors");
    if (td != kNoNode && g_.kind(td) != Kind::kNone) {
      if (g_.kind(td) != Kind::kList && g_.kind(td) != Kind::kTuple)
        return Bad(s.fqn + ": transform_descriptors is no list");
      for (NodeId t : g_.Items(td)) {
        ZF_ASSIGN_OR_RETURN(std::string d, Str(t, s.fqn + ": a transform descriptor"));
        s.transforms.push_back(std::move(d));
      }
    }
    return s;
  }

  const Graph& g_;
  std::vector<Region> region_;
};

Status Interpreter::ReadMegatronFields(const Fields& f, Metadata* md) {
  NodeId data = f.Get(kMcoreDataField);
  if (data != kNoNode && g_.kind(data) != Kind::kNone) {
    md->has_mcore_data = true;
    ZF_ASSIGN_OR_RETURN(std::span<const NodeId> items, DictItems(data, kMcoreDataField));
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      ZF_ASSIGN_OR_RETURN(std::string key, Str(items[i], "a mcore_data key"));
      ZF_ASSIGN_OR_RETURN(std::span<const NodeId> fields, DictItems(items[i + 1], "mcore_data['" + key + "']"));
      for (size_t k = 0; k + 1 < fields.size(); k += 2) {
        if (g_.kind(fields[k]) != Kind::kStr || g_.AsStr(fields[k]) != kNdShapeField) continue;
        ZF_ASSIGN_OR_RETURN(std::vector<int64_t> shape, Ints(fields[k + 1], key + ": " + std::string(kNdShapeField)));
        md->nd_reformulated.emplace_back(key, std::move(shape));
      }
    }
  }
  NodeId plans = f.Get(kLocalPlansField);
  if (plans != kNoNode && g_.kind(plans) != Kind::kNone) {
    if (g_.kind(plans) != Kind::kList && g_.kind(plans) != Kind::kTuple) return Bad("all_local_plans is no list");
    md->local_plans = g_.Items(plans).size();
    if (md->local_plans > 0) {
      NodeId first = g_.Items(plans)[0];
      if (g_.kind(first) == Kind::kObject && g_.kind(g_.Object(first).callable) == Kind::kGlobal)
        md->local_plan_class = std::string(g_.GlobalName(g_.Object(first).callable));
    }
  }
  return Status::OK();
}

}  // namespace

Result<Metadata> ReadMetadata(std::span<const std::byte> bytes, const pickle::DecodeLimits& limits) {
  Result<pickle::Decoded> decoded = pickle::Decode(bytes, 0, limits);
  if (!decoded.ok()) return Status(decoded.status()).WithRecord(kRecord);
  Interpreter in(decoded->graph);
  ZF_TRY(in.CheckGlobals(decoded->root));
  return in.Read(decoded->root);
}

}  // namespace zerofold::dcp
