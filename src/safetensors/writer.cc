#include "safetensors/writer.h"

#include <algorithm>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "io/utf8.h"
#include "json/writer.h"
#include "safetensors/format.h"

namespace zerofold::safetensors {

namespace {

Status Invalid(std::string message) { return Status::InvalidArgument("safetensors: " + message); }

std::string Quote(std::string_view s) { return json::QuoteForDisplay(s); }

Status CheckSpec(const TensorSpec& t) {
  if (io::FirstInvalidUtf8(t.name) != io::kValidUtf8) {
    return Invalid("tensor name " + Quote(t.name) + " is not valid UTF-8");
  }
  if (t.name == kMetadataKey) return Invalid("a tensor cannot be named \"__metadata__\"");
  ByteSize size = TensorByteSize(t.dtype, t.shape);
  if (size.problem == SizeProblem::kOverflow) {
    return Invalid("size of tensor " + Quote(t.name) + " overflows 64 bits");
  }
  if (size.problem == SizeProblem::kMisaligned) {
    return Invalid("tensor " + Quote(t.name) + " of " + std::string(DtypeCode(t.dtype)) +
                   " is not a whole number of bytes");
  }
  if (size.bytes != t.byte_size) {
    return Invalid("tensor " + Quote(t.name) + " of " + std::string(DtypeCode(t.dtype)) +
                   " needs " + std::to_string(size.bytes) + " bytes, but " +
                   std::to_string(t.byte_size) + " were given");
  }
  return Status::OK();
}

Status CheckMetadata(const Metadata& metadata) {
  std::vector<std::string_view> keys;
  for (const auto& [k, v] : metadata) {
    keys.push_back(k);
    if (io::FirstInvalidUtf8(k) != io::kValidUtf8 ||
        io::FirstInvalidUtf8(v) != io::kValidUtf8) {
      return Invalid("__metadata__ entry " + Quote(k) + " is not valid UTF-8");
    }
  }
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end()) return Invalid("__metadata__ key " + Quote(*dup) + " appears twice");
  return Status::OK();
}

// The header JSON as serde_json::to_string writes the reference's Metadata.
Result<std::string> HeaderJson(const std::vector<PlannedTensor>& tensors,
                               const std::optional<Metadata>& metadata) {
  json::Writer w;
  w.BeginObject();
  if (metadata) {
    w.Key(kMetadataKey);
    w.BeginObject();
    for (const auto& [k, v] : *metadata) {
      w.Key(k);
      w.String(v);
    }
    w.EndObject();
  }
  for (const PlannedTensor& t : tensors) {
    w.Key(t.name);
    w.BeginObject();
    w.Key(kDtypeKey);
    w.String(DtypeCode(t.dtype));
    w.Key(kShapeKey);
    w.BeginArray();
    for (uint64_t d : t.shape) w.Uint(d);
    w.EndArray();
    w.Key(kDataOffsetsKey);
    w.BeginArray();
    w.Uint(t.begin);
    w.Uint(t.end);
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  return w.Finish();
}

}  // namespace

Result<Layout> PlanFile(std::span<const TensorSpec> tensors, const std::optional<Metadata>& metadata) {
  for (const TensorSpec& t : tensors) ZF_TRY(CheckSpec(t));
  if (metadata) ZF_TRY(CheckMetadata(*metadata));
  {
    std::vector<std::string_view> names;
    names.reserve(tensors.size());
    for (const TensorSpec& t : tensors) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    auto dup = std::adjacent_find(names.begin(), names.end());
    if (dup != names.end()) return Invalid("tensor name " + Quote(*dup) + " appears twice");
  }

  // tensor.rs prepare(): `right.dtype().cmp(&left.dtype()).then(lname.cmp(rname))`.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TensorSpec& x = tensors[a];
    const TensorSpec& y = tensors[b];
    if (x.dtype != y.dtype) return x.dtype > y.dtype;
    return x.name < y.name;  // std::string compares bytes as unsigned, like Rust's Ord
  });

  Layout layout;
  layout.tensors.reserve(order.size());
  uint64_t offset = 0;
  for (size_t i : order) {
    const TensorSpec& t = tensors[i];
    std::optional<uint64_t> end = io::CheckedAdd(offset, t.byte_size);
    if (!end) return Invalid("the tensors' total size overflows 64 bits");
    layout.tensors.push_back(PlannedTensor{t.name, t.dtype, t.shape, offset, *end, i});
    offset = *end;
  }
  ZF_ASSIGN_OR_RETURN(std::string header, HeaderJson(layout.tensors, metadata));
  // prepare(): `metadata_buf.len().next_multiple_of(N_LEN)`, padded with b' '.
  const size_t padding = (kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment;
  header.append(padding, kHeaderPadding);
  if (header.size() > kMaxHeaderSize) {
    return Invalid("the header would be " + std::to_string(header.size()) +
                   " bytes, over the reference's limit of " + std::to_string(kMaxHeaderSize) +
                   " (HeaderTooLarge); split the tensors into shards");
  }
  layout.data_start = kHeaderLengthSize + header.size();
  std::optional<uint64_t> file_size = io::CheckedAdd(layout.data_start, offset);
  if (!file_size) return Invalid("the file size overflows 64 bits");
  layout.file_size = *file_size;
  layout.header = std::move(header);
  return layout;
}

Result<uint64_t> FileSize(std::span<const TensorSpec> tensors, const std::optional<Metadata>& metadata) {
  ZF_ASSIGN_OR_RETURN(Layout layout, PlanFile(tensors, metadata));
  return layout.file_size;
}

Status StreamWriter::Fail(std::string message) {
  if (error_.ok()) error_ = Invalid(std::move(message));
  return error_;
}

Status StreamWriter::WriteHeader() {
  if (!error_.ok()) return error_;
  if (header_done_) return Fail("WriteHeader called twice");
  std::byte prefix[kHeaderLengthSize];
  io::EncodeU64le(prefix, layout_.header.size());
  Status s = sink_.Append(prefix);
  if (s.ok()) s = sink_.Append(io::AsBytes(layout_.header));
  if (!s.ok()) return error_ = std::move(s);
  written_ = layout_.data_start;
  header_done_ = true;
  return Status::OK();
}

Status StreamWriter::BeginTensor(std::string_view name) {
  if (!error_.ok()) return error_;
  if (!header_done_) return Fail("BeginTensor before WriteHeader");
  if (in_tensor_ && left_ != 0) {
    return Fail("tensor " + Quote(layout_.tensors[next_ - 1].name) + " still needs " +
                std::to_string(left_) + " bytes when " + Quote(name) + " begins");
  }
  if (next_ >= layout_.tensors.size()) return Fail("tensor " + Quote(name) + " is not in the layout");
  const PlannedTensor& t = layout_.tensors[next_];
  if (t.name != name) {
    return Fail("tensor " + Quote(t.name) + " is next in the layout, not " + Quote(name));
  }
  ++next_;
  in_tensor_ = true;
  left_ = t.size();
  return Status::OK();
}

Status StreamWriter::Append(std::span<const std::byte> bytes) {
  if (!error_.ok()) return error_;
  if (!in_tensor_) return Fail("Append before BeginTensor");
  if (bytes.size() > left_) {
    return Fail("tensor " + Quote(layout_.tensors[next_ - 1].name) + " has " +
                std::to_string(left_) + " bytes left, " + std::to_string(bytes.size()) +
                " were appended");
  }
  if (bytes.empty()) return Status::OK();
  Status s = sink_.Append(bytes);
  if (!s.ok()) return error_ = std::move(s);
  left_ -= bytes.size();
  written_ += bytes.size();
  return Status::OK();
}

Status StreamWriter::WriteTensor(std::string_view name, std::span<const std::byte> bytes) {
  ZF_TRY(BeginTensor(name));
  ZF_TRY(Append(bytes));
  if (left_ != 0) {
    return Fail("tensor " + Quote(name) + " was given " + std::to_string(bytes.size()) +
                " bytes, it needs " + std::to_string(bytes.size() + left_));
  }
  return Status::OK();
}

Status StreamWriter::Finish() {
  if (!error_.ok()) return error_;
  if (!header_done_) return Fail("Finish before WriteHeader");
  if (in_tensor_ && left_ != 0) {
    return Fail("tensor " + Quote(layout_.tensors[next_ - 1].name) + " still needs " +
                std::to_string(left_) + " bytes");
  }
  if (next_ != layout_.tensors.size()) {
    return Fail(std::to_string(layout_.tensors.size() - next_) + " tensors were not written, from " +
                Quote(layout_.tensors[next_].name));
  }
  return Status::OK();
}

}  // namespace zerofold::safetensors
