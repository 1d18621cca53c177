#include "megatron/inspect.h"

#include <map>
#include <utility>

#include "dcp/folder.h"
#include "megatron/unstack.h"
#include "model/listing_json.h"

namespace zerofold::megatron {

namespace {

constexpr const char* kOptimizerGroup = "optimizer";

std::string RootClass(const dcp::Metadata& md) {
  if (md.mcore_metadata_root) return "megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata";
  return md.schema_2x ? "torch.distributed.checkpoint.metadata.Metadata"
                      : "torch.distributed._shard.checkpoint.metadata.Metadata";
}

MergeOutlook Outlook(Env* env, const Folder& folder, const MergeOptions& options) {
  MergeOutlook o;
  Result<PlannedMerge> m = PlanMegatronMerge(env, folder, options);
  if (!m.ok()) {
    o.refusal = m.status();
    return o;
  }
  o.mergeable = true;
  o.tensors = m->layout.entries.size();
  for (const gather::OutputEntry& e : m->layout.entries) o.bytes += gather::OutputBytes(m->gather.tensors[e.tensor]);
  return o;
}

void Ints(json::Writer& w, const std::vector<int64_t>& v) {
  w.BeginArray();
  for (int64_t d : v) w.Int(d);
  w.EndArray();
}

void WriteOutlook(json::Writer& w, const MergeOutlook& o) {
  w.BeginObject();
  w.Key("mergeable"); w.Bool(o.mergeable);
  w.Key("tensors"); w.Uint(o.tensors);
  w.Key("bytes"); w.Uint(o.bytes);
  w.Key("refusal");
  if (o.refusal.ok()) w.Null();
  else model::WriteJsonError(w, o.refusal);
  w.EndObject();
}

void WritePlain(json::Writer& w, const std::vector<std::pair<std::string, json::Value>>& values) {
  w.BeginObject();
  for (const auto& [k, v] : values) {
    w.Key(k);
    w.Write(v);
  }
  w.EndObject();
}

}  // namespace

Result<std::optional<Inspection>> InspectPath(Env* env, const std::string& path, const torch::ReadOptions& read) {
  ZF_ASSIGN_OR_RETURN(std::optional<Folder> folder, FindFolder(env, path, std::nullopt));
  if (!folder) return std::optional<Inspection>();
  Inspection i;
  i.folder = *folder;
  const dcp::DcpFolder dcp_folder{folder->torch_dist, {}};
  ZF_ASSIGN_OR_RETURN(dcp::Metadata md, dcp::LoadMetadata(env, dcp_folder, read.max_pickle_bytes, read.pickle));
  ZF_ASSIGN_OR_RETURN(i.common, ReadCommon(env, folder->torch_dist, read));
  i.listing = dcp::ListMetadata(dcp_folder, md);
  i.metadata_root = RootClass(md);
  i.has_mcore_data = md.has_mcore_data;
  i.local_plans = md.local_plans;
  i.local_plan_class = md.local_plan_class;
  i.core_version = CoreVersionHint(md);
  i.optimizer = FindOptimizerForm(md);
  for (const dcp::GroupTotal& g : i.listing.groups)
    if (g.group == kOptimizerGroup) i.optimizer_tensors = g.tensors, i.optimizer_bytes = g.nbytes;

  std::map<std::string, std::vector<int64_t>> original(md.nd_reformulated.begin(), md.nd_reformulated.end());
  for (const dcp::Entry& e : md.entries) {
    if (!e.is_tensor) continue;
    std::vector<int64_t> shape = e.size;
    if (auto found = original.find(e.key); found != original.end()) {
      i.nd.push_back(NdKey{e.key, e.size, found->second});
      shape = found->second;
    }
    StackedKey s{e.key, 0, 0};
    size_t axis = 0;
    if (LayerStack(e.key) && shape.size() > axis) s.layers = shape[axis++];
    if (ExpertStack(e.key) && shape.size() > axis) s.experts = shape[axis];
    if (s.layers || s.experts) i.stacked.push_back(std::move(s));
  }

  MergeOptions options;
  options.read = read;
  i.weights = Outlook(env, *folder, options);
  options.unstack = true;
  i.unstacked = Outlook(env, *folder, options);
  if (i.optimizer != OptimizerForm::kNone) {
    options.unstack = false;
    options.select = kOptimizerGroup;
    i.optimizer_merge = Outlook(env, *folder, options);
  }
  return std::optional<Inspection>(std::move(i));
}

void WriteInspectionJson(json::Writer& w, const Inspection& i) {
  w.BeginObject();
  w.Key("path"); w.String(i.folder.checkpoint);
  w.Key("format"); w.String("megatron");
  w.Key("megatron");
  w.BeginObject();
  w.Key("layout"); w.String(LayoutName(i.folder.layout));
  w.Key("torch_dist_folder"); w.String(i.folder.torch_dist);
  w.Key("tracker");
  if (i.folder.tracker.empty()) w.Null();
  else w.String(i.folder.tracker);
  w.Key("iteration_folder"); w.String(i.folder.iteration_folder);
  w.Key("metadata_json");
  w.BeginObject();
  w.Key("sharded_backend"); w.String(i.folder.sharded_backend);
  w.Key("sharded_backend_version"); w.Int(i.folder.sharded_backend_version);
  w.Key("common_backend"); w.String(i.folder.common_backend);
  w.Key("common_backend_version"); w.Int(i.folder.common_backend_version);
  w.EndObject();
  w.Key("metadata_root"); w.String(i.metadata_root);
  w.Key("mcore_data"); w.Bool(i.has_mcore_data);
  w.Key("local_plans"); w.Uint(i.local_plans);
  w.Key("local_plan_class"); w.String(i.local_plan_class);
  w.Key("core_version"); w.String(i.core_version);
  w.Key("common");
  w.BeginObject();
  w.Key("present"); w.Bool(i.common.present);
  w.Key("iteration");
  if (i.common.iteration) w.Int(*i.common.iteration);
  else w.Null();
  w.Key("checkpoint_version");
  if (i.common.checkpoint_version) w.Double(*i.common.checkpoint_version);
  else w.Null();
  w.Key("keys");
  w.Strings(i.common.top_keys);
  w.Key("args");
  if (i.common.has_args) WritePlain(w, i.common.args);
  else w.Null();
  w.Key("content_metadata"); WritePlain(w, i.common.content_metadata);
  model::WriteUnsafeGlobals(w, i.common.unsafe_globals);
  w.EndObject();
  w.Key("optimizer");
  w.BeginObject();
  w.Key("form"); w.String(OptimizerFormName(i.optimizer));
  w.Key("sharding_type"); w.String(i.common.sharding_type);
  w.Key("tensors"); w.Uint(i.optimizer_tensors);
  w.Key("nbytes"); w.Uint(i.optimizer_bytes);
  w.EndObject();
  w.Key("stacked");
  w.BeginArray();
  for (const StackedKey& s : i.stacked) {
    w.BeginObject();
    w.Key("key"); w.String(s.key);
    w.Key("layers"); w.Int(s.layers);
    w.Key("experts"); w.Int(s.experts);
    w.EndObject();
  }
  w.EndArray();
  w.Key("nd_reformulated");
  w.BeginArray();
  for (const NdKey& n : i.nd) {
    w.BeginObject();
    w.Key("key"); w.String(n.key);
    w.Key("stored_shape"); Ints(w, n.stored);
    w.Key("shape"); Ints(w, n.original);
    w.EndObject();
  }
  w.EndArray();
  w.Key("merge");
  w.BeginObject();
  w.Key("weights"); WriteOutlook(w, i.weights);
  w.Key("unstacked"); WriteOutlook(w, i.unstacked);
  w.Key("optimizer"); WriteOutlook(w, i.optimizer_merge);
  w.EndObject();
  w.EndObject();
  dcp::WriteListingFields(w, i.listing);
  w.EndObject();
}

}  // namespace zerofold::megatron
