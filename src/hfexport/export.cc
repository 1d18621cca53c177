#include "hfexport/export.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "gather/assemble.h"
#include "hfexport/map.h"
#include "megatron/unstack.h"
#include "output/folder.h"
#include "torch/dtype.h"

namespace zerofold::hfexport {

namespace {

constexpr uint64_t kMaxTableBytes = uint64_t{16} << 20;

bool Lists(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// Whether `t` fits BASE: 2 by model_type or architecture, 1 by "*", 0 not.
int Fit(const Table& t, const BaseModel& base) {
  if (Lists(t.model_types, base.model_type)) return 2;
  for (const std::string& a : base.architectures)
    if (Lists(t.architectures, a)) return 2;
  return Lists(t.model_types, "*") ? 1 : 0;
}

std::string SourceName(SourceKind kind, const gather::GatherPlan& trainer, const BaseModel& base) {
  if (kind == SourceKind::kMegatron) return "megatron";
  if (kind == SourceKind::kHf) return "hf";
  std::set<std::string> names;
  for (const BaseTensor& b : base.tensors) names.insert(b.name);
  for (const gather::GatherTensor& t : trainer.tensors)
    if (names.count(t.name)) return "hf";
  return "torchtitan";
}

Result<std::vector<Table>> LoadTables(Env* env, const std::vector<std::string>& files) {
  std::vector<Table> tables;
  for (const std::string& f : files) {
    ZF_ASSIGN_OR_RETURN(std::string text, env->ReadSmallFile(f, kMaxTableBytes));
    ZF_ASSIGN_OR_RETURN(Table t, ParseTable(text, f));
    tables.push_back(std::move(t));
  }
  ZF_ASSIGN_OR_RETURN(std::vector<Table> builtin, BuiltinTables());
  for (Table& t : builtin) tables.push_back(std::move(t));
  return tables;
}

}  // namespace

Result<HfExport> ExportHf(Env* env, gather::GatherPlan trainer, SourceKind kind, const HfOptions& options) {
  ZF_ASSIGN_OR_RETURN(BaseModel base, ReadBase(env, options.base, options.list));
  ZF_ASSIGN_OR_RETURN(std::vector<Table> tables, LoadTables(env, options.tables));
  HfExport out;
  out.source = SourceName(kind, trainer, base);
  const Table* table = nullptr;
  for (int want = 2; want >= 1 && !table; --want)
    for (const Table& t : tables)
      if (t.source == out.source && Fit(t, base) == want) {
        table = &t;
        break;
      }
  if (!table)
    return Status::Unsupported("no family table for model_type '" + base.model_type + "' from a " + out.source +
                               " checkpoint (add one with --hf-table FILE; tables/hf/README.md)")
        .WithPath(base.config_path);
  out.table = table->path;
  out.family = table->family;
  if (kind == SourceKind::kMegatron) {
    ZF_ASSIGN_OR_RETURN(megatron::Unstacked u, megatron::Unstack(std::move(trainer.tensors)));
    trainer.tensors = std::move(u.tensors);
  }
  ZF_ASSIGN_OR_RETURN(Mapped m, ApplyTable(std::move(trainer), *table, base.config));
  if (!m.unmapped.empty() && !options.drop_unmapped)
    return Status::Unsupported(std::to_string(m.unmapped.size()) + " trainer tensors no rule of " + table->path +
                                   " maps: " + FewNames(m.unmapped) + " (--drop-unmapped leaves them out)")
        .WithPath(base.folder);
  // Ties: the trainer's own where BASE stores the name (a tied head BASE
  // leaves out, as tied Hugging Face checkpoints do, is dropped), then BASE
  // names no rule exported, written as copies of their owners.
  std::set<std::string> exported;
  for (const gather::GatherTensor& t : m.plan.tensors) exported.insert(t.name);
  std::set<std::string> in_base;
  for (const BaseTensor& b : base.tensors) in_base.insert(b.name);
  for (gather::Tie& tie : m.trainer_ties) {
    if (!in_base.count(tie.name)) {
      m.dropped.push_back(tie.name);
      continue;
    }
    exported.insert(tie.name);
    m.plan.ties.push_back(std::move(tie));
  }
  for (const BaseTensor& b : base.tensors) {
    if (exported.count(b.name)) continue;
    for (const TableTie& tie : table->ties) {
      std::optional<Bindings> bound = MatchPattern(tie.name, b.name);
      if (!bound || (!tie.if_key.empty() && !ConfigFlag(base.config, tie.if_key))) continue;
      Result<std::string> owner = Substitute(tie.owner, *bound, base.config);
      if (!owner.ok()) return Status(owner.status()).WithPath(table->path);
      if (!exported.count(*owner)) continue;
      m.plan.ties.push_back(gather::Tie{b.name, *owner});
      break;
    }
  }
  if (Status checked = CheckAgainstBase(base, m.plan); !checked.ok())
    return Status::Corrupt(checked.message() + " (mapped by " + table->path + ")").WithPath(base.folder);
  std::map<std::string, torch::DType> dtypes;
  for (const BaseTensor& b : base.tensors) {
    dtypes.emplace(b.name, b.dtype);
    out.order.push_back(b.name);
  }
  for (gather::GatherTensor& t : m.plan.tensors) {
    const torch::DType want = dtypes[t.name];
    t.dtype = options.dtype && torch::Info(want).is_floating ? *options.dtype : want;
    for (const gather::Piece& p : t.pieces)
      if (!gather::CanConvert(p.dtype, t.dtype))
        return Status::Unsupported("cannot convert " + std::string(torch::Info(p.dtype).name) + " to " +
                                   std::string(torch::Info(t.dtype).name))
            .WithRecord(t.name);
  }
  out.plan = std::move(m.plan);
  out.unmapped = std::move(m.unmapped);
  out.dropped = std::move(m.dropped);
  out.tied = std::move(m.tied);
  out.config_path = base.config_path;
  ZF_ASSIGN_OR_RETURN(out.copies, output::ModelFileNames(env, options.base));
  return out;
}

}  // namespace zerofold::hfexport
