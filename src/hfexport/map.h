// Applying a family table (hfexport/table.h) to a gather plan: each
// trainer tensor's name matched against the rules, its op done as
// gather-plan transforms (gather/regrid.h), the outputs named. No byte is
// read; the result reads the same sources.
#ifndef ZEROFOLD_HFEXPORT_MAP_H_
#define ZEROFOLD_HFEXPORT_MAP_H_

#include <string>
#include <vector>

#include "gather/plan.h"
#include "hfexport/table.h"
#include "json/value.h"
#include "zerofold/result.h"

namespace zerofold::hfexport {

struct Mapped {
  gather::GatherPlan plan;             // the HF tensors, in trainer order; sources as given
  std::vector<std::string> unmapped;   // trainer names no rule matched
  std::vector<std::string> dropped;    // trainer names a drop or tied rule took out
  // tied rules: each pair must hold equal elements (hfexport/tied.h); the
  // second is the trainer tensor the rule names. Dtypes: float32 for
  // floating tensors (an exact widening of 16-bit ones), else as saved.
  std::vector<std::pair<gather::GatherTensor, gather::GatherTensor>> tied;
  // The trainer plan's ties whose name and owner copy rules map, under the
  // mapped names (not yet in plan.ties: ExportHf keeps those BASE stores).
  std::vector<gather::Tie> trainer_ties;
};

// Maps `trainer` (its tensors moved out) by `table` with BASE's config.json
// `config`. Errors (record: the trainer tensor; path: the table):
// kCorrupt when a tensor's shape does not fit its op with the
// config's numbers (rows that are no whole number of query groups, an odd
// head_dim for rope_permute, fewer rows than vocab_size), a config value an
// op needs that is missing or no positive integer, two tensors mapped to
// one name, a tied rule naming no trainer tensor or one of another shape;
// kUnsupported for a tensor whose grid is neither its shape nor
// flat.
Result<Mapped> ApplyTable(gather::GatherPlan trainer, const Table& table, const json::Value& config);

// True if config's `key` is true (absent, null, false: false).
bool ConfigFlag(const json::Value& config, const std::string& key);

}  // namespace zerofold::hfexport

#endif  // ZEROFOLD_HFEXPORT_MAP_H_
