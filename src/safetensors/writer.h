// The safetensors writer: lays out a file exactly as the reference writer
// (huggingface/safetensors, tensor.rs `prepare` + `serialize_to_file`) does,
// then streams the tensor bytes into a Sink.
//
// Layout, byte for byte as the reference writes it:
//   - tensors sorted by dtype, descending in the reference's Dtype order
//     (U64, I64, F64, C64, F32, U32, I32, BF16, F16, U16, I16, F8_E5M2FNUZ,
//     F8_E4M3FNUZ, F8_E8M0, F8_E4M3, F8_E5M2, I8, U8, F6_E3M2, F6_E2M3, F4,
//     BOOL), then by name
//     (bytewise), each placed right after the previous one;
//   - the header is compact JSON (serde_json::to_string): "__metadata__"
//     first when given, then the tensors in that order, each as
//     {"dtype":"F32","shape":[2,3],"data_offsets":[0,24]};
//   - padded with spaces to a multiple of 8 bytes; N is the padded size.
// One difference: the reference keeps __metadata__ in a HashMap, so with
// more than one entry its order varies from run to run; we write the entries
// in the order given, so output is deterministic.
//
// Usage:
//   ZF_ASSIGN_OR_RETURN(Layout layout, PlanFile(specs, metadata));
//   StreamWriter w(layout, sink);
//   ZF_TRY(w.WriteHeader());
//   for (const PlannedTensor& t : layout.tensors) {     // file order
//     ZF_TRY(w.BeginTensor(t.name));
//     ZF_TRY(w.Append(bytes...));                       // t.size() bytes in all
//   }
//   ZF_TRY(w.Finish());
//
// Thread safety: PlanFile is pure; a StreamWriter is used by one thread.
#ifndef ZEROFOLD_SAFETENSORS_WRITER_H_
#define ZEROFOLD_SAFETENSORS_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "safetensors/dtype.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::safetensors {

// One tensor to write.
struct TensorSpec {
  std::string name;  // valid UTF-8, unique, not "__metadata__"
  Dtype dtype = Dtype::BOOL;
  std::vector<uint64_t> shape;
  uint64_t byte_size = 0;  // must equal TensorByteSize(dtype, shape)
};

// __metadata__ entries, written in this order. The transformers convention
// for torch weights is {{"format", "pt"}}.
using Metadata = std::vector<std::pair<std::string, std::string>>;

struct PlannedTensor {
  std::string name;
  Dtype dtype = Dtype::BOOL;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // data_offsets
  uint64_t end = 0;
  size_t input_index = 0;  // position in the TensorSpec list given to PlanFile

  uint64_t size() const { return end - begin; }
};

struct Layout {
  std::string header;      // the N header bytes: JSON, then space padding
  uint64_t data_start = 0; // 8 + N
  uint64_t file_size = 0;  // 8 + N + the sum of the tensor sizes
  std::vector<PlannedTensor> tensors;  // in file order
};

// Lays out a file. kInvalidArgument (naming the tensor) if a name repeats, is
// "__metadata__" or is not UTF-8, a byte_size
// does not match dtype x shape, a metadata key repeats or a string is not
// UTF-8, the data size overflows 64 bits, or the header would be larger than
// the reference reads (HeaderTooLarge, 100,000,000 bytes): split such output
// into shards. `metadata` nullopt writes no __metadata__ key at all.
Result<Layout> PlanFile(std::span<const TensorSpec> tensors, const std::optional<Metadata>& metadata);

// The exact size of the file PlanFile would lay out.
Result<uint64_t> FileSize(std::span<const TensorSpec> tensors, const std::optional<Metadata>& metadata);

// Writes a planned file into a sink: the header, then each tensor's bytes in
// layout order, checking names and counts. The first failure (a sink error,
// or kInvalidArgument for a call out of order or too many bytes) is sticky:
// later calls return it again. The sink is not flushed or committed.
// REQUIRES: layout and sink outlive the writer.
class StreamWriter {
 public:
  StreamWriter(const Layout& layout, Sink& sink) : layout_(layout), sink_(sink) {}

  // The 8-byte length and the header. Call once, first.
  Status WriteHeader();
  // Starts the next tensor in layout order; `name` must be its name, and the
  // previous tensor must be complete.
  Status BeginTensor(std::string_view name);
  // Bytes of the current tensor; at most what it has left.
  Status Append(std::span<const std::byte> bytes);
  // BeginTensor + Append of the whole tensor.
  Status WriteTensor(std::string_view name, std::span<const std::byte> bytes);
  // Checks that every tensor was written in full.
  Status Finish();

  // Bytes written so far (header included).
  uint64_t written() const { return written_; }

 private:
  Status Fail(std::string message);

  const Layout& layout_;
  Sink& sink_;
  bool header_done_ = false;
  size_t next_ = 0;          // index of the next tensor to begin
  bool in_tensor_ = false;   // tensors[next_ - 1] is being written
  uint64_t left_ = 0;        // bytes the current tensor still needs
  uint64_t written_ = 0;
  Status error_;
};

}  // namespace zerofold::safetensors

#endif  // ZEROFOLD_SAFETENSORS_WRITER_H_
