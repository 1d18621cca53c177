// Reading a torch file into the checkpoint model (torch/checkpoint.h): the
// format told apart by its first bytes, as torch.load does (zip:
// torch/zip_checkpoint.h; legacy: torch/legacy.h), then every view checked
// (CheckViews).
#ifndef ZEROFOLD_TORCH_READ_H_
#define ZEROFOLD_TORCH_READ_H_

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// Reads a torch file. Errors name the record and offset:
//   kUnsupported  TorchScript archives (constants.pkl, code/), the "PYTORCH1"
//                 preview format, the oldest (tar) format, legacy storage
//                 views (view metadata, torch < 0.4), what the zip reader
//                 refuses (encrypted entries, methods other than stored and
//                 deflated);
//   kLimit        ReadOptions limits (pickle bytes, decoder limits, graph
//                 visits, path depth), naming the flag that raises them;
//   kCorrupt      a storage record shorter than its declared bytes, a pid
//                 whose key has no record, a storage declared twice with
//                 different types or sizes, a view that leaves its storage
//                 (record: the tensor name), a file that is no torch file.
// Big-endian archives (byteorder "big") are read and flagged in big_endian;
// their data is not byte-swapped. Unsafe globals are listed, not refused.
Result<Checkpoint> ReadCheckpoint(const RandomSource& src, const ReadOptions& options = {});

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_READ_H_
