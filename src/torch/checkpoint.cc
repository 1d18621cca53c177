#include "torch/checkpoint.h"

namespace zerofold::torch {

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kTorchZip: return "torch-zip";
    case Format::kTorchLegacy: return "torch-legacy";
  }
  return "unknown";
}

Status SetReadLimit(ReadOptions* options, std::string_view name, uint64_t value) {
  auto depth = [&](uint32_t* field) {
    if (value > UINT32_MAX) return Status::InvalidArgument("depth limits go up to 4294967295");
    *field = static_cast<uint32_t>(value);
    return Status::OK();
  };
  if (name == "max-pickle-depth") return depth(&options->pickle.max_depth);
  if (name == "max-path-depth") return depth(&options->max_path_depth);
  uint64_t* field = name == "max-pickle-memo"    ? &options->pickle.max_memo
                    : name == "max-pickle-stack" ? &options->pickle.max_stack
                    : name == "max-pickle-nodes" ? &options->pickle.max_nodes
                    : name == "max-pickle-bytes" ? &options->max_pickle_bytes
                    : name == "max-graph-visits" ? &options->max_graph_visits
                                                 : nullptr;
  if (field == nullptr) return Status::NotFound("no limit named " + std::string(name));
  *field = value;
  return Status::OK();
}

}  // namespace zerofold::torch
