#include "safetensors/reader.h"

#include <algorithm>
#include <string>
#include <utility>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "io/utf8.h"
#include "json/reader.h"
#include "json/value.h"
#include "json/writer.h"

namespace zerofold::safetensors {

namespace {

Status HeaderError(Code code, std::string_view reference_name, const std::string& why,
                   uint64_t offset) {
  Status s = code == Code::kLimit ? Status::Limit(std::string(reference_name) + ": " + why)
                                  : Status::Corrupt(std::string(reference_name) + ": " + why);
  s.WithRecord(kHeaderRecord).WithOffset(offset);
  return s;
}

Status Corrupt(std::string_view reference_name, const std::string& why, uint64_t offset) {
  return HeaderError(Code::kCorrupt, reference_name, why, offset);
}

Status Deserialization(const std::string& why, uint64_t offset) {
  return Corrupt("InvalidHeaderDeserialization", why, offset);
}

std::string Quote(std::string_view s) { return json::QuoteForDisplay(s); }

// The length field's checks, in the reference's order (read_metadata).
// `file_size` is nullopt for streams, whose size is unknown here.
Status CheckHeaderLength(uint64_t n, std::optional<uint64_t> file_size, const ReadOptions& options) {
  const bool past_end = file_size && n > *file_size - kHeaderLengthSize;
  if (n > options.max_header_bytes) {
    std::string why = "header length " + std::to_string(n) + " is over the limit of " +
                      std::to_string(options.max_header_bytes) + " bytes";
    // Raising the limit cannot help a length that runs past the file.
    if (past_end) {
      return Corrupt("HeaderTooLarge", why + " and past the end of the file (" +
                                           std::to_string(*file_size) + " bytes)", 0);
    }
    return HeaderError(Code::kLimit, "HeaderTooLarge", why + " (--max-header-bytes)", 0);
  }
  if (past_end) {
    return Corrupt("InvalidHeaderLength",
                   "header length " + std::to_string(n) + " runs past the end of the file: " +
                       std::to_string(*file_size - kHeaderLengthSize) +
                       " bytes follow the length field",
                   0);
  }
  return Status::OK();
}

Status HeaderTooSmall(uint64_t file_size) {
  return Corrupt("HeaderTooSmall",
                 "file is " + std::to_string(file_size) + " bytes, the header length field needs " +
                     std::to_string(kHeaderLengthSize),
                 0);
}

// A JSON number that the reference reads as `usize`: an integer without
// sign, fraction or exponent, below 2^64.
std::optional<uint64_t> AsUsize(const json::Value& v) { return v.AsUint64(); }

std::string DescribeValue(const json::Value& v) {
  if (v.is_number()) return v.number_text();
  if (v.is_string()) return "the string " + Quote(v.string());
  return "a " + std::string(json::TypeName(v.type()));
}

Status ParseShape(const std::string& name, const json::Value& v, std::vector<uint64_t>* shape) {
  if (!v.is_array()) {
    return Deserialization("shape of tensor " + Quote(name) + " is " + DescribeValue(v) +
                               ", expected an array of integers",
                           v.offset());
  }
  shape->reserve(v.array().size());
  for (size_t i = 0; i < v.array().size(); ++i) {
    const json::Value& d = v.array()[i];
    std::optional<uint64_t> dim = AsUsize(d);
    if (!dim) {
      return Deserialization("shape of tensor " + Quote(name) + " has " + DescribeValue(d) +
                                 " at index " + std::to_string(i) +
                                 ", expected an integer in [0, 2^64)",
                             d.offset());
    }
    shape->push_back(*dim);
  }
  return Status::OK();
}

Status ParseDataOffsets(const std::string& name, const json::Value& v, TensorInfo* t) {
  const std::string expected = ", expected [begin, end] with integers in [0, 2^64)";
  if (!v.is_array() || v.array().size() != 2) {
    std::string got = v.is_array() ? "an array of " + std::to_string(v.array().size()) + " values"
                                   : DescribeValue(v);
    return Deserialization("data_offsets of tensor " + Quote(name) + " is " + got + expected,
                           v.offset());
  }
  std::optional<uint64_t> begin = AsUsize(v.array()[0]);
  std::optional<uint64_t> end = AsUsize(v.array()[1]);
  if (!begin || !end) {
    const json::Value& bad = begin ? v.array()[1] : v.array()[0];
    return Deserialization("data_offsets of tensor " + Quote(name) + " has " + DescribeValue(bad) +
                               expected,
                           bad.offset());
  }
  t->begin = *begin;
  t->end = *end;
  return Status::OK();
}

Status ParseDtypeField(const std::string& name, const json::Value& v, TensorInfo* t) {
  std::optional<Dtype> dtype = v.is_string() ? ParseDtype(v.string()) : std::nullopt;
  if (!dtype) {
    return Deserialization("dtype of tensor " + Quote(name) + " is " + DescribeValue(v) +
                               (v.is_string() ? ", not a safetensors dtype" : ", expected a string"),
                           v.offset());
  }
  t->dtype = *dtype;
  return Status::OK();
}

// Where each field of a tensor entry sits, for the offset checks later.
struct FieldOffsets {
  uint64_t shape = kNoOffset;
  uint64_t data_offsets = kNoOffset;
};

// One tensor entry: an object with dtype, shape and data_offsets (unknown
// fields ignored, as serde does for TensorInfo), or the same three values as
// an array, which serde's derived struct visitor also accepts.
Status ParseTensorEntry(const json::Member& m, TensorInfo* t, FieldOffsets* at) {
  t->name = m.key;
  t->header_offset = m.key_offset;
  const json::Value& v = m.value;
  const json::Value* dtype = nullptr;
  const json::Value* shape = nullptr;
  const json::Value* offsets = nullptr;
  if (v.is_object()) {
    dtype = v.Find(kDtypeKey);
    shape = v.Find(kShapeKey);
    offsets = v.Find(kDataOffsetsKey);
    for (auto [field, key] : {std::pair{dtype, kDtypeKey}, std::pair{shape, kShapeKey},
                              std::pair{offsets, kDataOffsetsKey}}) {
      if (field == nullptr) {
        return Deserialization("tensor " + Quote(m.key) + " has no \"" + std::string(key) +
                                   "\" field",
                               v.offset());
      }
    }
  } else if (v.is_array() && v.array().size() == 3) {
    dtype = &v.array()[0];
    shape = &v.array()[1];
    offsets = &v.array()[2];
  } else {
    return Deserialization("tensor " + Quote(m.key) + " is " + DescribeValue(v) +
                               ", expected an object with dtype, shape and data_offsets",
                           v.offset());
  }
  ZF_TRY(ParseDtypeField(m.key, *dtype, t));
  ZF_TRY(ParseShape(m.key, *shape, &t->shape));
  if (std::optional<std::vector<int64_t>> torch_shape = TorchShape(t->dtype, t->shape)) {
    t->torch_dtype = ToTorch(t->dtype);
    t->torch_shape = std::move(*torch_shape);
  }
  ZF_TRY(ParseDataOffsets(m.key, *offsets, t));
  at->shape = shape->offset();
  at->data_offsets = offsets->offset();
  return Status::OK();
}

Status ParseMetadata(const json::Value& v, File* file) {
  if (v.is_null()) return Status::OK();  // Option<HashMap>: null is None
  if (!v.is_object()) {
    return Deserialization("__metadata__ is " + DescribeValue(v) +
                               ", expected an object of strings",
                           v.offset());
  }
  file->has_metadata = true;
  for (const json::Member& m : v.members()) {
    if (!m.value.is_string()) {
      return Deserialization("__metadata__ value for " + Quote(m.key) + " is " +
                                 DescribeValue(m.value) + ", expected a string",
                             m.value.offset());
    }
    file->metadata.emplace_back(m.key, m.value.string());
  }
  return Status::OK();
}

// tensor.rs Metadata::validate: in data_offsets order, each tensor starts
// where the previous ended and spans exactly shape x dtype bytes. Returns
// the end of the last tensor: the buffer size the header implies.
Result<uint64_t> Validate(File* file, std::vector<FieldOffsets>* at) {
  std::vector<uint32_t> order(file->tensors.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const TensorInfo& x = file->tensors[a];
    const TensorInfo& y = file->tensors[b];
    return std::pair(x.begin, x.end) < std::pair(y.begin, y.end);
  });
  std::vector<TensorInfo> sorted;
  std::vector<FieldOffsets> sorted_at;
  sorted.reserve(order.size());
  sorted_at.reserve(order.size());
  for (uint32_t i : order) {
    sorted.push_back(std::move(file->tensors[i]));
    sorted_at.push_back((*at)[i]);
  }
  file->tensors = std::move(sorted);
  *at = std::move(sorted_at);

  uint64_t start = 0;
  for (size_t i = 0; i < file->tensors.size(); ++i) {
    const TensorInfo& t = file->tensors[i];
    const FieldOffsets& where = (*at)[i];
    auto span = [&t] {
      std::string out = "[";
      out += std::to_string(t.begin);
      out += ", ";
      out += std::to_string(t.end);
      out += ']';
      return out;
    };
    if (t.begin != start || t.end < t.begin) {
      std::string why = "tensor " + Quote(t.name) + " has data_offsets " + span();
      why += t.begin != start ? ", but the previous tensor ends at " + std::to_string(start)
                              : ", which end before they begin";
      return Corrupt("InvalidOffset", why, where.data_offsets);
    }
    start = t.end;
    ByteSize size = TensorByteSize(t.dtype, t.shape);
    if (size.problem == SizeProblem::kOverflow) {
      return Corrupt("ValidationOverflow",
                     "size of tensor " + Quote(t.name) + " (" + std::string(DtypeCode(t.dtype)) +
                         ", " + std::to_string(t.shape.size()) + " dims) overflows 64 bits",
                     where.shape);
    }
    if (size.problem == SizeProblem::kMisaligned) {
      return Corrupt("MisalignedSlice",
                     "tensor " + Quote(t.name) + " of " + std::string(DtypeCode(t.dtype)) +
                         " is not a whole number of bytes",
                     where.shape);
    }
    if (t.end - t.begin != size.bytes) {
      return Corrupt("TensorInvalidInfo",
                     "tensor " + Quote(t.name) + " of " + std::string(DtypeCode(t.dtype)) + " needs " +
                         std::to_string(size.bytes) + " bytes, but data_offsets " + span() +
                         " span " + std::to_string(t.end - t.begin),
                     where.data_offsets);
    }
  }
  return start;
}

}  // namespace

const TensorInfo* File::Find(std::string_view name) const {
  auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                             [&](uint32_t i, std::string_view n) { return tensors[i].name < n; });
  if (it == by_name.end() || tensors[*it].name != name) return nullptr;
  return &tensors[*it];
}

std::optional<std::string_view> File::FindMetadata(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

Result<File> ParseHeader(std::span<const std::byte> header, std::optional<uint64_t> file_size,
                         const ReadOptions& options) {
  const uint64_t n = header.size();
  if (file_size && *file_size < kHeaderLengthSize) return HeaderTooSmall(*file_size);
  ZF_TRY(CheckHeaderLength(n, file_size, options));

  const std::string_view text = io::AsChars(header);
  if (size_t bad = io::FirstInvalidUtf8(text); bad != io::kValidUtf8) {
    return Corrupt("InvalidHeader", "header is not valid UTF-8", kHeaderLengthSize + bad);
  }
  json::ParseOptions jopts;
  jopts.max_depth = kJsonMaxNesting;
  jopts.depth_is_format_rule = true;  // the reference refuses deeper headers too
  jopts.max_bytes = n;
  jopts.max_values = options.max_header_values;
  Result<json::Value> parsed = json::Parse(text, jopts, kHeaderLengthSize);
  if (!parsed.ok()) {
    const Status& js = parsed.status();
    if (js.code() == Code::kLimit) {  // only max_values can be hit: zerofold's own limit
      Status s = Status::Limit("header has more than " +
                               std::to_string(options.max_header_values) +
                               " JSON values (ReadOptions::max_header_values)");
      s.WithRecord(kHeaderRecord).WithOffset(js.offset());
      return s;
    }
    return Corrupt("InvalidHeaderDeserialization", js.message(), js.offset());
  }
  const json::Value& root = *parsed;
  if (!root.is_object()) {
    return Deserialization("header is " + DescribeValue(root) + ", expected a JSON object",
                           root.offset());
  }

  File file;
  file.header_size = n;
  file.data_start = kHeaderLengthSize + n;
  std::vector<FieldOffsets> at;
  file.tensors.reserve(root.members().size());
  at.reserve(root.members().size());
  for (const json::Member& m : root.members()) {
    if (m.key == kMetadataKey) {
      ZF_TRY(ParseMetadata(m.value, &file));
      continue;
    }
    file.tensors.emplace_back();
    at.emplace_back();
    ZF_TRY(ParseTensorEntry(m, &file.tensors.back(), &at.back()));
  }
  if (file.tensors.size() > UINT32_MAX) {
    return Deserialization("more than 2^32 tensors", root.offset());
  }
  ZF_ASSIGN_OR_RETURN(uint64_t buffer_size, Validate(&file, &at));

  // 8 + N + buffer_size must be the file size; computed without overflow.
  std::optional<uint64_t> expected = io::CheckedAdd(file.data_start, buffer_size);
  if (file_size && (!expected || *expected != *file_size)) {
    uint64_t data_bytes = *file_size - file.data_start;
    uint64_t offset = expected ? std::min(*expected, *file_size) : *file_size;
    return Corrupt("MetadataIncompleteBuffer",
                   "the tensors cover " + std::to_string(buffer_size) +
                       " bytes of data, but the file has " + std::to_string(data_bytes) +
                       " after the header",
                   offset);
  }
  if (!expected) {
    return Corrupt("MetadataIncompleteBuffer",
                   "the tensors cover " + std::to_string(buffer_size) +
                       " bytes of data, past any file size",
                   file.data_start);
  }
  file.file_size = *expected;
  for (TensorInfo& t : file.tensors) t.data_offset = file.data_start + t.begin;  // <= file_size

  file.by_name.resize(file.tensors.size());
  for (uint32_t i = 0; i < file.by_name.size(); ++i) file.by_name[i] = i;
  std::sort(file.by_name.begin(), file.by_name.end(),
            [&](uint32_t a, uint32_t b) { return file.tensors[a].name < file.tensors[b].name; });
  return file;
}

Result<File> ParseFile(std::span<const std::byte> bytes, const ReadOptions& options) {
  if (bytes.size() < kHeaderLengthSize) return HeaderTooSmall(bytes.size());
  const uint64_t n = io::DecodeU64le(bytes.data());
  ZF_TRY(CheckHeaderLength(n, bytes.size(), options));
  return ParseHeader(bytes.subspan(kHeaderLengthSize, static_cast<size_t>(n)), bytes.size(),
                     options);
}

Result<File> ReadHeader(const RandomSource& src, const ReadOptions& options) {
  auto with_path = [&](Status s) {
    s.WithPath(src.name());
    return s;
  };
  const uint64_t file_size = src.size();
  if (file_size < kHeaderLengthSize) return with_path(HeaderTooSmall(file_size));
  std::byte prefix[kHeaderLengthSize];
  Status s = ReadExactAt(src, 0, prefix);
  if (!s.ok()) return with_path(std::move(s));
  const uint64_t n = io::DecodeU64le(prefix);
  s = CheckHeaderLength(n, file_size, options);
  if (!s.ok()) return with_path(std::move(s));
  // n <= max_header_bytes and n <= file_size - 8: the allocation is bounded
  // by the limit and by what the file really holds.
  if (!std::in_range<size_t>(n)) {
    return with_path(HeaderError(Code::kLimit, "HeaderTooLarge",
                                 "header length " + std::to_string(n) + " exceeds memory", 0));
  }
  std::vector<std::byte> header(static_cast<size_t>(n));
  s = ReadExactAt(src, kHeaderLengthSize, header);
  if (!s.ok()) return with_path(std::move(s));
  Result<File> file = ParseHeader(header, file_size, options);
  if (!file.ok()) return with_path(std::move(file).status());
  return file;
}

Result<File> ReadHeader(StreamSource& src, const ReadOptions& options) {
  auto with_path = [&](Status s) {
    s.WithPath(src.name());
    return s;
  };
  const uint64_t start = src.position();
  std::byte prefix[kHeaderLengthSize];
  Status s = ReadExact(src, prefix);
  if (!s.ok()) {
    if (s.code() != Code::kCorrupt) return with_path(std::move(s));
    return with_path(Corrupt("HeaderTooSmall",
                             "stream ends before the 8-byte header length field", 0));
  }
  const uint64_t n = io::DecodeU64le(prefix);
  s = CheckHeaderLength(n, std::nullopt, options);
  if (!s.ok()) return with_path(std::move(s));
  if (!std::in_range<size_t>(n)) {
    return with_path(HeaderError(Code::kLimit, "HeaderTooLarge",
                                 "header length " + std::to_string(n) + " exceeds memory", 0));
  }
  // Read in chunks: a stream's size is unknown, so a large n is not trusted
  // with one allocation before the bytes are there.
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::byte> header;
  while (s.ok() && header.size() < n) {
    const size_t old = header.size();
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, n - old));
    header.resize(old + want);
    s = ReadExact(src, std::span<std::byte>(header.data() + old, want));
  }
  if (!s.ok()) {
    if (s.code() != Code::kCorrupt) return with_path(std::move(s));
    return with_path(Corrupt("InvalidHeaderLength",
                             "header length " + std::to_string(n) +
                                 " runs past the end of the stream (" +
                                 std::to_string(src.position() - start) + " bytes read)",
                             0));
  }
  Result<File> file = ParseHeader(header, std::nullopt, options);
  if (!file.ok()) return with_path(std::move(file).status());
  return file;
}

}  // namespace zerofold::safetensors
