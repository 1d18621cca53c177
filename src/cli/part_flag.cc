#include "cli/part_flag.h"

#include "cli/progress.h"

namespace zerofold::cli {

FlagSpec PartFlagSpec() {
  return {"part", true,
          "write only part I of N (I from 0 to N-1, as SLURM_ARRAY_TASK_ID with --array=0-$((N-1))) of a folder OUT, "
          "no index; 'finish' checks every file (sizes; with --verify, values) and writes the index",
          "I/N|finish"};
}

Result<output::PartSpec> ApplyPartFlag(const ParsedArgs& args) {
  std::optional<std::string> v = args.Value("part");
  if (!v) return output::PartSpec{};
  return output::ParsePart(*v);
}

void WritePartsJson(json::Writer& w, const output::PartSpec& part, const output::PartFiles& files) {
  w.Key("parts");
  if (part.kind != output::PartSpec::Kind::kPart) {
    w.Null();
  } else {
    w.BeginArray();
    for (uint32_t p = 0; p < part.count; ++p) {
      uint64_t total = 0;
      w.BeginObject();
      w.Key("part");
      w.Uint(p);
      w.Key("files");
      w.BeginArray();
      for (size_t k = 0; k < files.paths.size(); ++k) {
        if (files.file_parts[k] != p) continue;
        w.String(files.paths[k]);
        total += files.bytes[k];
      }
      w.EndArray();
      w.Key("bytes");
      w.Uint(total);
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("skipped");
  w.Strings(files.skipped);
}

bool InThisPart(const output::PartSpec& part, const output::PartFiles& files, size_t k) {
  return part.kind == output::PartSpec::Kind::kPart && k < files.file_parts.size() && files.file_parts[k] == part.index;
}

std::string PartSummary(const output::PartSpec& part, const output::PartFiles& files, bool index) {
  if (part.kind == output::PartSpec::Kind::kFinish)
    return "finish: " + std::to_string(files.paths.size()) + " files complete" + (index ? ", index written" : "");
  if (part.kind != output::PartSpec::Kind::kPart) return "";
  size_t mine = 0;
  uint64_t total = 0;
  for (size_t k = 0; k < files.paths.size(); ++k) {
    if (!InThisPart(part, files, k)) continue;
    ++mine;
    total += files.bytes[k];
  }
  const size_t skipped = files.skipped.size();
  return "part " + std::to_string(part.index) + "/" + std::to_string(part.count) + ": " + std::to_string(mine) +
         " of " + std::to_string(files.paths.size()) + " files, " + HumanBytes(total) +
         (skipped ? " (" + std::to_string(skipped) + " already complete, skipped)" : "") +
         "; run --part finish after every part";
}

}  // namespace zerofold::cli
