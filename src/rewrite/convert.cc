#include "rewrite/convert.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "model/checkpoint_file.h"
#include "model/hf_folder.h"
#include "model/select.h"
#include "rewrite/shrink.h"

namespace zerofold::rewrite {

Result<Input> ReadInput(Env* env, const std::string& path, const ConvertOptions& options, bool one_of_many,
                        model::TorchlessTensors torchless) {
  Input in;
  in.path = path;
  ZF_ASSIGN_OR_RETURN(in.src, env->OpenRandom(path));
  Result<model::CheckpointFile> read =
      model::ReadCheckpointFile(*in.src, options.read, model::SafetensorsGraph::kBuild, torchless);
  if (!read.ok()) return Status(read.status()).WithPath(path);
  in.ckpt = std::move(read->ckpt);
  in.metadata = std::move(read->metadata);
  in.torchless = std::move(read->torchless);
  if (Status s = model::SelectTensors(in.ckpt, options.select, options.only, options.read, one_of_many); !s.ok()) return s.WithPath(path);
  return in;
}

Status WriteConvertFiles(Env* env, output::FileSet& set, const ConvertOptions& options, ConvertReport& report) {
  output::FileSetOptions writing = output::FileSetOptionsOf(options);
  writing.part = options.part;
  writing.force = options.force;
  writing.zstd = options.zstd;
  writing.progress = options.progress;
  ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
  if (options.part.kind != output::PartSpec::Kind::kAll) report.parts = std::move(written.parts);
  report.copied = std::move(written.copied);
  report.removed = std::move(written.removed);
  if (set.folder && options.part.kind != output::PartSpec::Kind::kPart) report.index = set.tail.index;
  return Status::OK();
}

}  // namespace zerofold::rewrite
