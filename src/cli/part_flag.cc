#include "cli/part_flag.h"

#include "cli/progress.h"

namespace zerofold::cli {

FlagSpec PartFlagSpec() {
  return {"part", true,
          "write only part I of N (I from 0 to N-1, as SLURM_ARRAY_TASK_ID with --array=0-$((N-1))) of a folder OUT, "
          "no index; 'finish' checks every file and writes the index",
          "I/N|finish"};
}

Result<ops::PartSpec> ApplyPartFlag(const ParsedArgs& args) {
  std::optional<std::string> v = args.Value("part");
  if (!v) return ops::PartSpec{};
  return ops::ParsePart(*v);
}

void WritePartsJson(json::Writer& w, const ops::PartSpec& part, const std::vector<std::string>& paths,
                    const std::vector<uint64_t>& bytes, const std::vector<uint32_t>& file_parts) {
  w.Key("parts");
  if (part.kind != ops::PartSpec::Kind::kPart) {
    w.Null();
    return;
  }
  w.BeginArray();
  for (uint32_t p = 0; p < part.count; ++p) {
    uint64_t total = 0;
    w.BeginObject();
    w.Key("part");
    w.Uint(p);
    w.Key("files");
    w.BeginArray();
    for (size_t k = 0; k < paths.size(); ++k) {
      if (file_parts[k] != p) continue;
      w.String(paths[k]);
      total += bytes[k];
    }
    w.EndArray();
    w.Key("bytes");
    w.Uint(total);
    w.EndObject();
  }
  w.EndArray();
}

std::string PartSummary(const ops::PartSpec& part, const std::vector<uint64_t>& bytes,
                        const std::vector<uint32_t>& file_parts, size_t skipped) {
  if (part.kind == ops::PartSpec::Kind::kFinish)
    return "finish: " + std::to_string(bytes.size()) + " files complete, index written";
  if (part.kind != ops::PartSpec::Kind::kPart) return "";
  size_t files = 0;
  uint64_t total = 0;
  for (size_t k = 0; k < bytes.size(); ++k) {
    if (file_parts[k] != part.index) continue;
    ++files;
    total += bytes[k];
  }
  return "part " + std::to_string(part.index) + "/" + std::to_string(part.count) + ": " + std::to_string(files) +
         " of " + std::to_string(bytes.size()) + " files, " + HumanBytes(total) +
         (skipped ? " (" + std::to_string(skipped) + " already complete, skipped)" : "") +
         "; run --part finish after every part";
}

}  // namespace zerofold::cli
