// Torch zip archives (torch >= 1.6; torch/serialization.py _save/_load):
// <top>/data.pkl holds the object, <top>/data/<key> each storage's bytes,
// <top>/version, byteorder, .data/serialization_id, ... small metadata.
// The top folder may have any name (torch uses the file's stem or
// "archive"); record order is irrelevant.
#ifndef ZEROFOLD_TORCH_ZIP_CHECKPOINT_H_
#define ZEROFOLD_TORCH_ZIP_CHECKPOINT_H_

#include <cstdint>
#include <string_view>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// Reads the archive's directory and data.pkl, recognizes tensors and
// locates each storage's record, checking it holds the declared bytes. Does
// not check views against storages (ReadCheckpoint does). Errors name the
// record: kUnsupported for TorchScript archives (constants.pkl or code/);
// kCorrupt for a missing data.pkl, bytes after its STOP, a storage key
// without a data/<key> record, a record shorter than its storage, a
// byteorder record that is neither "little" nor "big".
Result<Checkpoint> ReadZipCheckpoint(const RandomSource& src, const ReadOptions& options);

// True for a record (relative to the top folder) only TorchScript archives
// hold: constants.pkl or anything under code/.
bool IsTorchScriptRecord(std::string_view relative);

// kUnsupported "a TorchScript archive ..." naming `record` at `offset`.
Status TorchScriptArchive(std::string_view record, uint64_t offset);

// torch.jit.save deflates its code records, which the zip readers refuse
// before anything else is known: turns that kUnsupported into
// TorchScriptArchive; any other status comes back unchanged.
Status ExplainTorchScript(Status s);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_ZIP_CHECKPOINT_H_
