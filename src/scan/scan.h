// zerofold scan: a verdict for every file under the PATHs given, for the
// CLI (`zerofold scan`) and the C API (zf_scan_json), through one call.
//
// Walk. A file PATH is judged alone. A folder PATH is walked depth first,
// each folder's entries in bytewise name order; every regular file is
// reported once, with one verdict, and nothing is skipped silently: a file
// no reader takes is reported as "not a checkpoint". Folders reached twice
// (a symlink loop, a PATH inside another) are walked once (Env::GetFileId).
//
// How a file is judged (the readers of inspect and the model, never a copy):
//   - a file in a PyTorch Distributed Checkpoint folder (dcp::FindDcpFolder:
//     the folder holds .metadata; Megatron-Core torch_dist folders are
//     such): .metadata by dcp::LoadMetadata, each *.distcp file it names by
//     what .metadata says it holds (a .distcp file is no file torch.load
//     reads alone), then the checks merge makes (dcp::PlanDcp over every
//     tensor key: chunks cover each tensor exactly, stay inside their files
//     and the folder, each chunk archive holds one tensor and no unsafe
//     global), an error given to the file it names, else to .metadata;
//     when .metadata fails, its data files get its verdict; the
//     safetensors form likewise, its shards judged as safetensors files;
//   - a Hugging Face index (pytorch_model.bin.index.json,
//     model.safetensors.index.json): model::ResolveModelPath's check of the
//     index against its shards (a missing shard, a name held by no shard);
//   - any other file whose first bytes are a zip archive, a pickle (the
//     legacy format's magic number) or a safetensors header, or whose name
//     says it is a checkpoint (.pt .pth .bin .ckpt .safetensors .pkl
//     .pickle): model::ReadCheckpointFile over its bytes whatever its name
//     (DeepSpeed's *_states.pt files and Megatron's common.pt are such);
//     a DeepSpeed folder is also read whole (DeepSpeedFolderError, judge.h):
//     its error goes to `latest` or the file it names;
//   - a file that no torch reader takes: judged by its first pickle, what
//     torch.load unpickles first (JudgeAsPickle in judge.cc);
//   - a zip archive the torch reader refuses, not named like a checkpoint,
//     with no record named data.pkl (any case): not a checkpoint; with one,
//     or not even an archive: corrupt;
//   - anything else: not a checkpoint.
//
// Verdicts (one per file):
//   safe        read, and names no unsafe global (Checkpoint::unsafe_globals);
//   unsafe      names globals torch.load would run (listed, never run);
//   corrupt     the reader refused the bytes (kCorrupt, kUnsupported,
//               kLimit: `error` says which and where);
//   ambiguous   torch and zerofold could read it differently (kAmbiguous);
//   unreadable  the system failed a read (kIO);
//   not a checkpoint.
//
// Per file, besides the verdict: its size; the bytes its storages hold and
// the bytes their views reference (model::Listing); what `zerofold shrink`
// would save (its own dry-run plan, rewrite::PlanShrinkFile in place, so
// the two cannot disagree; torch files only); and its optimizer-state
// bytes by the one rule of IsOptimizerStatePath below.
//
// Memory: the walk's open folders and one file's metadata at a time; with
// `hash`, one xxh3-128 per distinct tensor seen (duplicates.h). Metadata
// only (directories, pickles, headers) unless `hash`, which reads every
// tensor's bytes.
#ifndef ZEROFOLD_SCAN_SCAN_H_
#define ZEROFOLD_SCAN_SCAN_H_

#include <functional>
#include <string>
#include <vector>

#include "scan/optimizer.h"
#include "scan/result.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::scan {

// Scans `paths` over `env`. `on_file` gets each file's result as soon as
// it is judged (in walk order); the totals are returned. A PATH that does
// not exist or a folder that cannot be listed is reported as an unreadable
// result for that path. Two things end the scan early, their status
// returned: `on_file` returning an error, and kCancelled from the Env.
Result<Totals> Scan(Env* env, const std::vector<std::string>& paths, const ScanOptions& options,
                    const std::function<Status(const FileResult&)>& on_file);

}  // namespace zerofold::scan

#endif  // ZEROFOLD_SCAN_SCAN_H_
