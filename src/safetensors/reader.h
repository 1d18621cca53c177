// The safetensors reader: validates a file's header exactly as the reference
// (huggingface/safetensors, tensor.rs `SafeTensors::read_metadata`) does and
// returns where each tensor's bytes are. Tensor bytes are never read.
//
// Every check of the reference is made, in its order, and a failure names the
// reference's error in its message ("InvalidOffset: ..."), with record
// "header" and the absolute file offset of the byte at fault:
//   HeaderTooSmall                file shorter than 8 bytes           @ 0
//   HeaderTooLarge                N above ReadOptions::max_header_bytes @ 0
//                                 (kLimit; kCorrupt if N also runs past the end)
//   InvalidHeaderLength           8 + N past the end of the file      @ 0
//   InvalidHeader                 header not UTF-8                    @ the bad byte
//   InvalidHeaderDeserialization  not JSON, not an object, a field of the
//                                 wrong type, an unknown dtype, nesting
//                                 past serde_json's 127 levels         @ the value
//   InvalidOffset                 data_offsets do not start where the
//                                 previous tensor (in offset order) ended @ data_offsets
//   ValidationOverflow            shape product x bits overflows      @ shape
//   MisalignedSlice               bits not a multiple of 8 (F4, F6)   @ shape
//   TensorInvalidInfo             end - begin != shape x dtype size   @ data_offsets
//   MetadataIncompleteBuffer      the last end is not the buffer size @ where the
//                                 buffer should end, or the file's end if sooner
// All are kCorrupt except where noted. A header with more JSON values than
// ReadOptions::max_header_values is kLimit (zerofold's own memory bound; the
// message names no reference error). What the reference accepts, this
// accepts: JSON whitespace before and after the object (its InvalidHeaderStart
// check is disabled), members in any order, unknown fields in a tensor entry
// (ignored), `"__metadata__": null`, a tensor entry written as the array
// [dtype, shape, data_offsets] (serde reads structs from sequences).
// Stricter than the reference: a repeated key anywhere in the header is
// refused (serde_json would keep the last tensor entry silently).
//
// Thread safety: the functions are pure, except for reading the source;
// RandomSource reads are thread-safe, a StreamSource is not.
#ifndef ZEROFOLD_SAFETENSORS_READER_H_
#define ZEROFOLD_SAFETENSORS_READER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "safetensors/dtype.h"
#include "safetensors/format.h"
#include "torch/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::safetensors {

struct ReadOptions {
  // Largest header (N) read. The default is the reference's MAX_HEADER_SIZE;
  // raise it (--max-header-bytes) only for files the reference refuses.
  uint64_t max_header_bytes = kMaxHeaderSize;
  // Most JSON values in the header (about 50 bytes of memory each). Real
  // headers hold about 10 per tensor.
  uint64_t max_header_values = 10'000'000;
};

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::BOOL;
  // The matching torch dtype (ToTorch) and the shape torch gives the
  // tensor (TorchShape: F4's last dimension halved); torch_dtype is nullopt
  // where torch has no dtype (F6_E2M3, F6_E3M2) or no shape (F4 of rank 0
  // or with an odd last dimension; a dimension past 2^63 - 1).
  std::optional<torch::DType> torch_dtype;
  std::vector<int64_t> torch_shape;
  std::vector<uint64_t> shape;  // [] is a scalar
  uint64_t begin = 0;           // data_offsets, relative to the byte buffer
  uint64_t end = 0;
  uint64_t data_offset = 0;     // absolute file offset of the first byte
  uint64_t header_offset = 0;   // absolute offset of the name's quote in the header

  uint64_t byte_size() const { return end - begin; }
};

struct File {
  uint64_t header_size = 0;  // N: JSON plus padding
  uint64_t data_start = 0;   // 8 + N: absolute offset of the byte buffer
  uint64_t file_size = 0;    // data_start + the buffer's size
  // In data order (by data_offsets; ties keep header order), as the
  // reference validates them. For our writer's files this is header order.
  std::vector<TensorInfo> tensors;
  // Indices into `tensors`, sorted by name (bytewise).
  std::vector<uint32_t> by_name;
  bool has_metadata = false;  // the header has a non-null __metadata__
  std::vector<std::pair<std::string, std::string>> metadata;  // header order

  // The tensor named `name`, or nullptr. O(log n).
  const TensorInfo* Find(std::string_view name) const;
  // The __metadata__ value for `key`, or nullopt.
  std::optional<std::string_view> FindMetadata(std::string_view key) const;
};

// Validates a whole file held in memory: the fuzzing and test entry point.
Result<File> ParseFile(std::span<const std::byte> file, const ReadOptions& options = {});

// Reads and validates the header of `src` (two reads: the length, then the
// header). Errors carry src.name() as their path; read failures keep their
// code (kIO).
Result<File> ReadHeader(const RandomSource& src, const ReadOptions& options = {});

// Reads the length and the header from a stream, leaving it at the byte
// buffer. The buffer is not read, so MetadataIncompleteBuffer cannot be
// checked: File::file_size is the size the header implies, and the caller
// must find exactly file_size - data_start bytes left in the stream.
Result<File> ReadHeader(StreamSource& src, const ReadOptions& options = {});

// The checks after the length field: `header` is the N bytes at offset 8,
// `file_size` the whole file's size, or nullopt to skip the final
// MetadataIncompleteBuffer check (streams). Offsets in errors and in the
// result are absolute.
Result<File> ParseHeader(std::span<const std::byte> header, std::optional<uint64_t> file_size,
                         const ReadOptions& options = {});

}  // namespace zerofold::safetensors

#endif  // ZEROFOLD_SAFETENSORS_READER_H_
