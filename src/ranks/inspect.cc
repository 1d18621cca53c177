#include "ranks/inspect.h"

#include <utility>

#include "pickle/safety.h"

namespace zerofold::ranks {

Result<std::optional<Inspection>> InspectPath(Env* env, const std::string& path, const torch::ReadOptions& read) {
  ZF_ASSIGN_OR_RETURN(std::optional<RankFolder> folder, FindRankFolder(env, path));
  if (!folder) return std::optional<Inspection>();
  Inspection i;
  i.folder = *folder;
  MergeOptions options;
  options.check_copies = false;
  options.keep_unsafe = true;  // described all the same; the outlook says merge needs --keep-unsafe
  options.read = read;
  Result<PlannedMerge> m = PlanRankMerge(env, *folder, options);
  if (!m.ok()) {
    i.outlook = m.status();
    return std::optional<Inspection>(std::move(i));
  }
  i.summary = m->summary;
  if (!m->summary.unsafe_globals.empty())
    i.outlook = pickle::RefuseUnsafe(m->summary.unsafe_globals, kUnsafeHint).WithPath(m->summary.first_unsafe_file);
  for (size_t k = 0; k < m->gather.tensors.size(); ++k) {
    const gather::GatherTensor& t = m->gather.tensors[k];
    i.tensors.push_back(TensorRow{t.name, t.dtype, t.shape, m->summary.placements[k], t.pieces.size()});
  }
  return std::optional<Inspection>(std::move(i));
}

void WriteInspectionJson(json::Writer& w, const Inspection& i) {
  w.BeginObject();
  w.Key("path");
  w.String(i.folder.path);
  w.Key("format");
  w.String("ranks");
  w.Key("world_size");
  w.Int(i.folder.world);
  w.Key("strategy");
  w.String(i.folder.strategy);
  w.Key("optimizer_files");
  w.Bool(!i.folder.optim_files.empty());
  w.Key("huggingface");
  w.Bool(!i.folder.hf_folder.empty());
  w.Key("meshes");
  w.Strings(i.summary.meshes);
  w.Key("merge");
  w.BeginObject();
  w.Key("ok");
  w.Bool(i.outlook.ok());
  if (!i.outlook.ok()) {
    w.Key("refusal");
    w.String(i.outlook.ToString());
  }
  w.EndObject();
  w.Key("tensors");
  w.BeginArray();
  for (const TensorRow& t : i.tensors) {
    w.BeginObject();
    w.Key("name");
    w.String(t.name);
    w.Key("dtype");
    w.String(std::string(torch::Info(t.dtype).name));
    w.Key("shape");
    w.BeginArray();
    for (int64_t d : t.shape) w.Int(d);
    w.EndArray();
    w.Key("placements");
    w.String(t.placements);
    w.Key("pieces");
    w.Uint(t.pieces);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace zerofold::ranks
