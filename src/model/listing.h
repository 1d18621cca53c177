// A listing of what one checkpoint file holds, whatever its format: the
// common ground of `inspect`, `--dry-run` and the C API. Reads only the
// container's directory and the pickle or header, never tensor bytes.
#ifndef ZEROFOLD_MODEL_LISTING_H_
#define ZEROFOLD_MODEL_LISTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::model {

enum class FileFormat { kTorchZip, kTorchLegacy, kSafetensors };
// "torch-zip", "torch-legacy", "safetensors" (JSON output; never change).
std::string_view FileFormatName(FileFormat format);

// Safetensors when the file starts with an 8-byte header length followed by
// '{' (after optional spaces), or when its name (src.name()) ends with
// ".safetensors" and it starts as no torch file does (a zip's "PK", the
// legacy magic number's pickle), so a damaged safetensors file gets the
// safetensors reader's error; torch otherwise (zip or legacy pickle; the
// torch reader tells which and rejects anything else).
Result<FileFormat> SniffFormat(const RandomSource& src);

struct TensorInfo {
  std::string name;
  std::vector<torch::PathElem> path;
  std::string dtype;     // torch's spelling ("float32"); a safetensors code torch lacks ("F4")
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  std::string storage;   // storage key (safetensors: the tensor's name)
  int64_t offset = 0;    // elements
  uint64_t nbytes = 0;   // numel x itemsize
  bool quantized = false;
};

struct StorageInfo {
  std::string key;
  std::string dtype;
  uint64_t nbytes = 0;
  uint64_t referenced_nbytes = 0;  // union of its views' byte extents
};

struct Listing {
  std::string path;
  FileFormat format = FileFormat::kTorchZip;
  std::vector<TensorInfo> tensors;
  std::vector<StorageInfo> storages;
  uint64_t stored_bytes = 0;      // sum of storage nbytes
  uint64_t referenced_bytes = 0;  // sum of storage referenced_nbytes
  std::vector<std::string> unsafe_globals;
  // zip: records in the archive, and how many are deflated.
  uint64_t zip_records = 0;
  uint64_t deflated_records = 0;
  // zip: the byteorder record says big (storages are read byte-swapped, as
  // torch 2.x loads them: torch/storage_source.h).
  bool big_endian = false;
  uint64_t crc_unrecorded_records = 0;  // torch::Checkpoint::crc_unrecorded_records
  // Groups of tensor names that share bytes (tied weights, views of views).
  std::vector<std::vector<std::string>> tied;
};

// A Hugging Face folder as a whole (inspect FOLDER): the sums of its
// checkpoint files' listings, and what shrink would make of them.
struct FolderTotal {
  std::string path;
  size_t files = 0;               // checkpoint files listed
  uint64_t file_bytes = 0;        // their sizes on disk
  uint64_t stored_bytes = 0;      // sum of Listing::stored_bytes
  uint64_t referenced_bytes = 0;  // sum of Listing::referenced_bytes
  // The files' sizes after `zerofold shrink --in-place FOLDER` (its exact
  // plan, nothing written); unset when shrink would not take the folder
  // (safetensors only: nothing to shrink; a file that failed to list).
  std::optional<uint64_t> shrunk_file_bytes;
  // The folder's entries not read as its checkpoint files or index (not
  // Hugging Face layout: config, tokenizer, stray files; a folder's name
  // ends in "/"), full paths in name order: `zerofold scan` judges them.
  std::vector<std::string> unread;
};

struct ListOptions {
  torch::ReadOptions torch;
  uint64_t max_safetensors_header = 100'000'000;
};

// Lists a torch checkpoint already read.
Listing ListCheckpoint(const torch::Checkpoint& ckpt, const std::string& path);

// Opens and lists one file, reading no storage record (torch::ReadOptions::
// locate_records false). Errors carry the path.
Result<Listing> ListFile(Env* env, const std::string& path, const ListOptions& options = {});

}  // namespace zerofold::model

#endif  // ZEROFOLD_MODEL_LISTING_H_
