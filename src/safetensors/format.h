// Constants of the safetensors format, named once.
//
// The format (huggingface/safetensors, safetensors/src/tensor.rs, "the
// reference" below):
//   [0, 8)          N, the header size, u64 little-endian
//   [8, 8 + N)      the header: UTF-8 JSON object, maybe padded with spaces
//   [8 + N, end)    the byte buffer; each tensor's data_offsets are relative
//                   to its start, and together they tile it exactly.
// The header maps each tensor name to {"dtype", "shape", "data_offsets"} and
// may hold "__metadata__", an object of string values.
#ifndef ZEROFOLD_SAFETENSORS_FORMAT_H_
#define ZEROFOLD_SAFETENSORS_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zerofold::safetensors {

constexpr size_t kHeaderLengthSize = 8;             // tensor.rs N_LEN: size_of::<u64>()
constexpr uint64_t kMaxHeaderSize = 100'000'000;    // tensor.rs MAX_HEADER_SIZE
constexpr uint64_t kHeaderAlignment = 8;            // prepare(): header padded to N_LEN
constexpr char kHeaderPadding = ' ';                // prepare(): padding byte b' '
constexpr std::string_view kMetadataKey = "__metadata__";  // HashMetadata::metadata
constexpr std::string_view kDtypeKey = "dtype";            // TensorInfo::dtype
constexpr std::string_view kShapeKey = "shape";            // TensorInfo::shape
constexpr std::string_view kDataOffsetsKey = "data_offsets";  // TensorInfo::data_offsets
// The reference parses the header with serde_json, whose recursion limit
// (remaining_depth = 128, failing when it reaches 0) allows 127 nested arrays
// and objects.
constexpr uint32_t kJsonMaxNesting = 127;

// The record name errors carry for anything in the header (STYLE.md 1.3).
constexpr std::string_view kHeaderRecord = "header";

}  // namespace zerofold::safetensors

#endif  // ZEROFOLD_SAFETENSORS_FORMAT_H_
