#include "torch/read.h"

#include <algorithm>
#include <string>
#include <vector>

#include "io/cursor.h"
#include "torch/format.h"
#include "torch/legacy.h"
#include "torch/zip_checkpoint.h"

namespace zerofold::torch {

namespace {

// Enough to see the tar magic.
constexpr uint64_t kSniffBytes = kTarMagicOffset + 8;

Result<Checkpoint> ReadAny(const RandomSource& src, const ReadOptions& options) {
  std::vector<std::byte> head(std::min<uint64_t>(src.size(), kSniffBytes));
  ZF_TRY(ReadExactAt(src, 0, head));
  std::string_view text = io::AsChars(head);
  if (text.starts_with(kPreviewMagic))
    return Status::Unsupported("an archive of torch's preview release (starts with \"PYTORCH1\"), which torch no "
                               "longer reads either")
        .WithOffset(0);
  Checkpoint ckpt;
  if (text.starts_with(kZipLocalHeaderMagic)) {
    ZF_ASSIGN_OR_RETURN(ckpt, ReadZipCheckpoint(src, options));
  } else if (text.size() >= kTarMagicOffset + kTarMagic.size() &&
             text.substr(kTarMagicOffset, kTarMagic.size()) == kTarMagic) {
    return Status::Unsupported("a tar archive: the format of the earliest torch releases (members storages, "
                               "tensors, pickle)")
        .WithOffset(kTarMagicOffset);
  } else {
    ZF_ASSIGN_OR_RETURN(ckpt, ReadLegacyCheckpoint(src, options));
  }
  ZF_TRY(CheckViews(ckpt));
  return ckpt;
}

}  // namespace

Result<Checkpoint> ReadCheckpoint(const RandomSource& src, const ReadOptions& options) {
  Result<Checkpoint> r = ReadAny(src, options);
  if (!r.ok()) {
    Status s = r.status();
    return s.WithPath(src.name());
  }
  return r;
}

}  // namespace zerofold::torch
