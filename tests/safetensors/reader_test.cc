#include "safetensors/reader.h"

#include <doctest/doctest.h>

#include <algorithm>  // io/mem.h uses std::min without including it
#include <string>
#include <vector>

#include "io/mem.h"
#include "test_files.h"

namespace zerofold::safetensors {
namespace {

using testing::Bytes;
using testing::File;
using testing::FileWithLength;

// From the reference's own tests (tensor.rs test_deserialization): N = 60
// ('<'), one I32 [2,2] tensor, 16 zero bytes.
const char kReferenceHeader[] =
    R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";

TEST_CASE("safetensors reads the reference's test file") {
  std::string raw = std::string("<\0\0\0\0\0\0\0", 8) + kReferenceHeader + std::string(16, '\0');
  Result<safetensors::File> f = ParseFile(Bytes(raw));
  REQUIRE(f.ok());
  CHECK_EQ(f->header_size, 60u);
  CHECK_EQ(f->data_start, 68u);
  CHECK_EQ(f->file_size, 84u);
  CHECK_FALSE(f->has_metadata);
  REQUIRE_EQ(f->tensors.size(), 1u);
  const TensorInfo& t = f->tensors[0];
  CHECK_EQ(t.name, "test");
  CHECK_EQ(t.dtype, Dtype::I32);
  CHECK_EQ(t.torch_dtype, torch::DType::kInt32);
  CHECK_EQ(t.shape, std::vector<uint64_t>{2, 2});
  CHECK_EQ(t.begin, 0u);
  CHECK_EQ(t.end, 16u);
  CHECK_EQ(t.byte_size(), 16u);
  CHECK_EQ(t.data_offset, 68u);
  CHECK_EQ(t.header_offset, 9u);
  CHECK_EQ(f->Find("test"), &f->tensors[0]);
  CHECK_EQ(f->Find("tes"), nullptr);
}

TEST_CASE("safetensors accepts what the reference accepts") {
  struct Good {
    const char* name;
    std::string header;
    size_t data_len;
    size_t tensors;
  };
  const Good kGood[] = {
      // tensor.rs test_empty_shapes_allowed: a scalar.
      {"scalar", R"({"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})", 4, 1},
      // tensor.rs test_zero_sized_tensor (with its space in [0, 0]).
      {"zero sized", R"({"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}})", 0, 1},
      // tensor.rs test_whitespace_padded_header: JSON whitespace after the object.
      {"trailing whitespace", "{}\r \t\n", 0, 0},
      // The reference's InvalidHeaderStart check is disabled: leading whitespace passes.
      {"leading whitespace", "\t\n {} ", 0, 0},
      {"empty metadata", R"({"__metadata__":{}})", 0, 0},
      {"null metadata", R"({"__metadata__":null})", 0, 0},
      {"unknown field ignored",
       R"({"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"extra":[{"x":null}]}})", 2, 1},
      {"fields in any order", R"({"t":{"data_offsets":[0,2],"shape":[2],"dtype":"U8"}})", 2, 1},
      {"entry as a sequence", R"({"t":["U8",[2],[0,2]]})", 2, 1},
      {"F4 whole bytes", R"({"t":{"dtype":"F4","shape":[1,2],"data_offsets":[0,1]}})", 1, 1},
      {"F6 whole bytes", R"({"t":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}})", 3, 1},
      {"two empty at one offset",
       R"({"b":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
       0, 2},
      {"max u64 dims that multiply to zero",
       R"({"t":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", 0, 1},
  };
  for (const Good& g : kGood) {
    INFO(g.name);
    Result<safetensors::File> f = ParseFile(File(g.header, g.data_len));
    REQUIRE_MESSAGE(f.ok(), f.status().ToString());
    CHECK_EQ(f->tensors.size(), g.tensors);
  }
}

TEST_CASE("safetensors orders tensors by data offsets and keeps metadata order") {
  const std::string header =
      R"({"w2":{"dtype":"U8","shape":[3],"data_offsets":[5,8]},)"
      R"("__metadata__":{"format":"pt","b":"2","a":""},)"
      R"("w1":{"dtype":"BF16","shape":[1,2],"data_offsets":[1,5]},)"
      R"("w0":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})";
  Result<safetensors::File> f = ParseFile(File(header, 8));
  REQUIRE(f.ok());
  REQUIRE_EQ(f->tensors.size(), 3u);
  CHECK_EQ(f->tensors[0].name, "w0");
  CHECK_EQ(f->tensors[1].name, "w1");
  CHECK_EQ(f->tensors[2].name, "w2");
  CHECK_EQ(f->tensors[1].dtype, Dtype::BF16);
  CHECK_EQ(f->tensors[1].data_offset, 8 + header.size() + 1);
  CHECK_EQ(f->tensors[2].data_offset, 8 + header.size() + 5);
  CHECK(f->has_metadata);
  REQUIRE_EQ(f->metadata.size(), 3u);
  CHECK_EQ(f->metadata[0], std::pair<std::string, std::string>("format", "pt"));
  CHECK_EQ(f->metadata[1].first, "b");
  CHECK_EQ(f->metadata[2].first, "a");
  CHECK_EQ(f->FindMetadata("format").value(), "pt");
  CHECK_FALSE(f->FindMetadata("c").has_value());
  CHECK_EQ(f->Find("w2")->begin, 5u);
  CHECK_EQ(f->Find("w0")->end, 1u);
  CHECK_EQ(f->by_name, std::vector<uint32_t>{0, 1, 2});
}

TEST_CASE("safetensors maps every dtype code and its size") {
  struct Row {
    const char* code;
    Dtype dtype;
    const char* shape;
    size_t bytes;
  };
  const Row kRows[] = {
      {"BOOL", Dtype::BOOL, "[3]", 3},     {"F4", Dtype::F4, "[4]", 2},
      {"F6_E2M3", Dtype::F6_E2M3, "[4]", 3}, {"F6_E3M2", Dtype::F6_E3M2, "[8]", 6},
      {"U8", Dtype::U8, "[3]", 3},         {"I8", Dtype::I8, "[3]", 3},
      {"F8_E5M2", Dtype::F8_E5M2, "[3]", 3}, {"F8_E4M3", Dtype::F8_E4M3, "[3]", 3},
      {"F8_E8M0", Dtype::F8_E8M0, "[3]", 3}, {"F8_E4M3FNUZ", Dtype::F8_E4M3FNUZ, "[3]", 3},
      {"F8_E5M2FNUZ", Dtype::F8_E5M2FNUZ, "[3]", 3}, {"I16", Dtype::I16, "[3]", 6},
      {"U16", Dtype::U16, "[3]", 6},       {"F16", Dtype::F16, "[3]", 6},
      {"BF16", Dtype::BF16, "[3]", 6},     {"I32", Dtype::I32, "[3]", 12},
      {"U32", Dtype::U32, "[3]", 12},      {"F32", Dtype::F32, "[3]", 12},
      {"C64", Dtype::C64, "[3]", 24},      {"F64", Dtype::F64, "[3]", 24},
      {"I64", Dtype::I64, "[3]", 24},      {"U64", Dtype::U64, "[3]", 24},
  };
  for (const Row& r : kRows) {
    INFO(r.code);
    std::string header = std::string(R"({"t":{"dtype":")") + r.code + R"(","shape":)" + r.shape +
                         R"(,"data_offsets":[0,)" + std::to_string(r.bytes) + "]}}";
    Result<safetensors::File> f = ParseFile(File(header, r.bytes));
    REQUIRE_MESSAGE(f.ok(), f.status().ToString());
    CHECK_EQ(f->tensors[0].dtype, r.dtype);
    CHECK_EQ(DtypeCode(r.dtype), r.code);
  }
}

// A header with '@' marking the byte the error must point at; the marker is
// removed before the file is built.
struct BadHeader {
  const char* name;
  std::string marked_header;
  size_t data_len;
  Code code;
  const char* reference_error;
};

TEST_CASE("safetensors rejects bad headers at the exact offset, naming the reference's error") {
  const BadHeader kBad[] = {
      {"not JSON", "@x{}", 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"unterminated object", "{@", 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"array header", "@[]", 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"string header", " @\"x\"", 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"NUL padding", std::string("{}@\0", 4), 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"trailing comma", "{\"__metadata__\":{},@}", 0, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"unknown dtype", R"({"t":{"dtype":@"F128","shape":[1],"data_offsets":[0,16]}})", 16,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"lowercase dtype", R"({"t":{"dtype":@"f32","shape":[1],"data_offsets":[0,4]}})", 4,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"dtype not a string", R"({"t":{"dtype":@7,"shape":[1],"data_offsets":[0,4]}})", 4,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"negative dim", R"({"t":{"dtype":"U8","shape":[@-1],"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"fractional dim", R"({"t":{"dtype":"U8","shape":[1,@1.0],"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"exponent dim", R"({"t":{"dtype":"U8","shape":[@1e0],"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"string dim", R"({"t":{"dtype":"U8","shape":[@"1"],"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"dim of 2^64", R"({"t":{"dtype":"U8","shape":[@18446744073709551616],"data_offsets":[0,1]}})",
       1, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"shape not an array", R"({"t":{"dtype":"U8","shape":@1,"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"three offsets", R"({"t":{"dtype":"U8","shape":[1],"data_offsets":@[0,1,1]}})", 1,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"one offset", R"({"t":{"dtype":"U8","shape":[0],"data_offsets":@[0]}})", 0,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"negative offset", R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[0,@-0]}})", 0,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"missing dtype", R"({"t":@{"shape":[1],"data_offsets":[0,1]}})", 1, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"missing shape", R"({"t":@{"dtype":"U8","data_offsets":[0,1]}})", 1, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"missing data_offsets", R"({"t":@{"dtype":"U8","shape":[1]}})", 1, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"entry is a string", R"({"t":@"U8"})", 0, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"entry sequence too short", R"({"t":@["U8",[0]]})", 0, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"metadata not an object", R"({"__metadata__":@"pt"})", 0, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"metadata number value", R"({"__metadata__":{"format":"pt","step":@3}})", 0,
       Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"duplicate tensor",
       R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},@"t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
       2, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"duplicate field", R"({"t":{"dtype":"U8","shape":[1],@"shape":[1],"data_offsets":[0,1]}})",
       1, Code::kCorrupt, "InvalidHeaderDeserialization"},
      {"duplicate metadata", R"({"__metadata__":{},@"__metadata__":{}})", 0, Code::kCorrupt,
       "InvalidHeaderDeserialization"},
      {"first tensor not at 0", R"({"t":{"dtype":"U8","shape":[1],"data_offsets":@[1,2]}})", 2,
       Code::kCorrupt, "InvalidOffset"},
      {"hole between tensors",
       R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":@[2,3]}})",
       3, Code::kCorrupt, "InvalidOffset"},
      {"overlapping tensors",
       R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":@[1,3]}})",
       3, Code::kCorrupt, "InvalidOffset"},
      {"same range twice",
       R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":@[0,2]}})",
       2, Code::kCorrupt, "InvalidOffset"},
      {"end before begin",
       R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[0],"data_offsets":@[2,1]}})",
       2, Code::kCorrupt, "InvalidOffset"},
      // tensor.rs test_invalid_info.
      {"size mismatch", R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":@[0, 4]}})", 4,
       Code::kCorrupt, "TensorInvalidInfo"},
      {"size mismatch F4", R"({"t":{"dtype":"F4","shape":[2],"data_offsets":@[0,2]}})", 2,
       Code::kCorrupt, "TensorInvalidInfo"},
      // tensor.rs test_validation_overflow, both cases.
      {"shape product overflows",
       R"({"test":{"dtype":"I32","shape":@[2,18446744073709551614],"data_offsets":[0,16]}})", 16,
       Code::kCorrupt, "ValidationOverflow"},
      {"bits overflow",
       R"({"test":{"dtype":"I32","shape":@[2,9223372036854775807],"data_offsets":[0,16]}})", 16,
       Code::kCorrupt, "ValidationOverflow"},
      {"F4 odd count", R"({"t":{"dtype":"F4","shape":@[3],"data_offsets":[0,2]}})", 2,
       Code::kCorrupt, "MisalignedSlice"},
      {"F6 partial byte", R"({"t":{"dtype":"F6_E3M2","shape":@[1],"data_offsets":[0,1]}})", 1,
       Code::kCorrupt, "MisalignedSlice"},
      {"nesting past serde_json's limit",
       R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":)" + std::string(125, '[') +
           "@[" + std::string(126, ']') + "}}",
       0, Code::kCorrupt, "InvalidHeaderDeserialization"},
  };
  for (const BadHeader& c : kBad) {
    INFO(c.name);
    std::string header = c.marked_header;
    const size_t mark = header.find('@');
    REQUIRE(mark != std::string::npos);
    header.erase(mark, 1);
    Result<safetensors::File> f = ParseFile(File(header, c.data_len));
    REQUIRE_FALSE(f.ok());
    const Status& s = f.status();
    INFO(s.ToString());
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.offset(), 8 + mark);
    CHECK_EQ(s.record(), "header");
    CHECK(s.message().rfind(std::string(c.reference_error) + ": ", 0) == 0);
  }
}

struct BadFile {
  const char* name;
  std::vector<std::byte> bytes;
  Code code;
  uint64_t offset;
  const char* reference_error;
};

TEST_CASE("safetensors rejects bad length fields and buffers") {
  const std::string ref(kReferenceHeader);
  std::vector<std::byte> too_large_ref = Bytes(
      std::string("<\0\0\0\0\xff\xff\xff", 8) + ref + std::string(16, '\0'));  // test_header_too_large
  const std::string huge_header =
      R"({"t":{"dtype":"U8","shape":[2305843009213693951],"data_offsets":[0,2305843009213693951]}})";
  const BadFile kBad[] = {
      {"empty file", {}, Code::kCorrupt, 0, "HeaderTooSmall"},  // test_header_too_small
      {"seven bytes", Bytes(std::string("\0\0\0\0\0\0\0", 7)), Code::kCorrupt, 0, "HeaderTooSmall"},
      {"length only", Bytes(std::string("<\0\0\0\0\0\0\0", 8)), Code::kCorrupt, 0,
       "InvalidHeaderLength"},  // test_invalid_header_length
      {"reference too large", too_large_ref, Code::kCorrupt, 0, "HeaderTooLarge"},
      {"N = 2^64-1", FileWithLength(UINT64_MAX, "{}", 0), Code::kCorrupt, 0, "HeaderTooLarge"},
      {"N = 2^63", FileWithLength(uint64_t{1} << 63, "{}", 0), Code::kCorrupt, 0,
       "HeaderTooLarge"},
      {"N = MAX_HEADER_SIZE + 1", FileWithLength(kMaxHeaderSize + 1, "{}", 0), Code::kCorrupt, 0,
       "HeaderTooLarge"},
      {"N = MAX_HEADER_SIZE", FileWithLength(kMaxHeaderSize, "{}", 0), Code::kCorrupt, 0,
       "InvalidHeaderLength"},
      {"N one past the end", FileWithLength(3, "{}", 0), Code::kCorrupt, 0, "InvalidHeaderLength"},
      {"non-UTF-8 header", Bytes(std::string("\x01\0\0\0\0\0\0\0\xff", 9)), Code::kCorrupt, 8,
       "InvalidHeader"},  // test_invalid_header_non_utf8
      {"non-UTF-8 padding", FileWithLength(4, "{} \xc0", 0), Code::kCorrupt, 11, "InvalidHeader"},
      {"truncated JSON", Bytes(std::string("\x01\0\0\0\0\0\0\0{", 9)), Code::kCorrupt, 9,
       "InvalidHeaderDeserialization"},  // test_invalid_header_not_json
      // test_metadata_incomplete_buffer, both halves.
      {"extra data", File(ref, 16 + 34), Code::kCorrupt, 8 + 60 + 16, "MetadataIncompleteBuffer"},
      {"missing data", File(ref, 14), Code::kCorrupt, 8 + 60 + 14, "MetadataIncompleteBuffer"},
      {"no data", File(ref, 0), Code::kCorrupt, 8 + 60, "MetadataIncompleteBuffer"},
      {"data but no tensors", File("{}", 1), Code::kCorrupt, 10, "MetadataIncompleteBuffer"},
      {"2^61 bytes of data declared", File(huge_header, 0), Code::kCorrupt, 8 + huge_header.size(),
       "MetadataIncompleteBuffer"},
  };
  for (const BadFile& c : kBad) {
    INFO(c.name);
    Result<safetensors::File> f = ParseFile(c.bytes);
    REQUIRE_FALSE(f.ok());
    const Status& s = f.status();
    INFO(s.ToString());
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.offset(), c.offset);
    CHECK_EQ(s.record(), "header");
    CHECK(s.message().rfind(std::string(c.reference_error) + ": ", 0) == 0);
  }
}

TEST_CASE("safetensors header size limit is kLimit when the file really holds the header") {
  ReadOptions opts;
  opts.max_header_bytes = 16;
  const std::string header = R"({"__metadata__":{"a":"b"}})";  // 26 bytes
  Result<safetensors::File> f = ParseFile(File(header, 0), opts);
  CHECK_EQ(f.status().code(), Code::kLimit);
  CHECK_EQ(f.status().offset(), 0u);
  CHECK_EQ(f.status().message(),
           "HeaderTooLarge: header length 26 is over the limit of 16 bytes (--max-header-bytes)");
  opts.max_header_bytes = 26;
  CHECK(ParseFile(File(header, 0), opts).ok());
  // The value-count limit bounds the tree's memory.
  opts = ReadOptions();
  opts.max_header_values = 2;
  f = ParseFile(File(header, 0), opts);
  CHECK_EQ(f.status().code(), Code::kLimit);
  CHECK_EQ(f.status().offset(), 8 + 21u);  // the third value, "b"
  CHECK_EQ(f.status().record(), "header");
  CHECK_EQ(f.status().message(),
           "header has more than 2 JSON values (ReadOptions::max_header_values)");
  opts.max_header_values = 3;
  CHECK(ParseFile(File(header, 0), opts).ok());
}

TEST_CASE("safetensors error messages say what the reference would and why") {
  auto message = [](const std::string& header, size_t data_len) {
    return ParseFile(File(header, data_len)).status().message();
  };
  CHECK_EQ(ParseFile(Bytes("abc")).status().message(),
           "HeaderTooSmall: file is 3 bytes, the header length field needs 8");
  CHECK_EQ(ParseFile(FileWithLength(100, "{}", 0)).status().message(),
           "InvalidHeaderLength: header length 100 runs past the end of the file: 2 bytes follow "
           "the length field");
  CHECK_EQ(ParseFile(FileWithLength(UINT64_MAX, "{}", 0)).status().message(),
           "HeaderTooLarge: header length 18446744073709551615 is over the limit of 100000000 "
           "bytes and past the end of the file (10 bytes)");
  CHECK_EQ(message(R"({"t":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
           "InvalidHeaderDeserialization: dtype of tensor \"t\" is the string \"F128\", not a "
           "safetensors dtype");
  CHECK_EQ(message(R"({"t":{"shape":[1],"data_offsets":[0,1]}})", 1),
           "InvalidHeaderDeserialization: tensor \"t\" has no \"dtype\" field");
  CHECK_EQ(message(R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1),
           "InvalidHeaderDeserialization: shape of tensor \"t\" has -1 at index 0, expected an "
           "integer in [0, 2^64)");
  CHECK_EQ(message(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"t":{}})", 1),
           "InvalidHeaderDeserialization: JSON: duplicate key \"t\" (first at offset 9)");
  CHECK_EQ(message(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                   3),
           "InvalidOffset: tensor \"b\" has data_offsets [2, 3], but the previous tensor ends at 1");
  CHECK_EQ(message(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,4]}})", 4),
           "TensorInvalidInfo: tensor \"test\" of I32 needs 16 bytes, but data_offsets [0, 4] span 4");
  CHECK_EQ(message(R"({"t":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2),
           "MisalignedSlice: tensor \"t\" of F4 is not a whole number of bytes");
  CHECK_EQ(message(R"({"t":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}})", 16),
           "ValidationOverflow: size of tensor \"t\" (I32, 2 dims) overflows 64 bits");
  CHECK_EQ(message(std::string(kReferenceHeader), 20),
           "MetadataIncompleteBuffer: the tensors cover 16 bytes of data, but the file has 20 "
           "after the header");
}

TEST_CASE("safetensors every strict prefix of a valid file fails cleanly") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}   )";
  std::vector<std::byte> full = File(header, 11);
  REQUIRE(ParseFile(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    INFO(n);
    Result<safetensors::File> f = ParseFile(std::span<const std::byte>(full.data(), n));
    REQUIRE_FALSE(f.ok());
    CHECK_EQ(f.status().code(), Code::kCorrupt);
    CHECK_EQ(f.status().record(), "header");
    CHECK_LE(f.status().offset(), n);
  }
}

TEST_CASE("safetensors ReadHeader on a RandomSource reads only the header") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  io::MemSource src("model.safetensors", File(header, 8));
  Result<safetensors::File> f = ReadHeader(src);
  REQUIRE(f.ok());
  CHECK_EQ(f->tensors[0].data_offset, 8 + header.size());
  CHECK_EQ(f->file_size, src.size());

  io::MemSource bad("bad.safetensors", File(header, 7));
  Status s = ReadHeader(bad).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.path(), "bad.safetensors");
  CHECK_EQ(s.record(), "header");
  CHECK_EQ(s.offset(), 8 + header.size() + 7);

  io::MemSource huge("huge.safetensors", FileWithLength(UINT64_MAX, "", 0));
  s = ReadHeader(huge).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.offset(), 0u);
  CHECK_EQ(s.path(), "huge.safetensors");
}

TEST_CASE("safetensors ReadHeader on a stream stops at the byte buffer") {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  io::MemStreamSource src("-", File(header, 2), /*max_chunk=*/3);
  Result<safetensors::File> f = ReadHeader(src);
  REQUIRE(f.ok());
  CHECK_EQ(src.position(), 8 + header.size());
  CHECK_EQ(f->file_size, 8 + header.size() + 2);

  io::MemStreamSource short_len("-", Bytes("abc"));
  CHECK_EQ(ReadHeader(short_len).status().message().rfind("HeaderTooSmall: ", 0), 0u);
  io::MemStreamSource short_header("-", FileWithLength(1000, "{}", 0));
  Status s = ReadHeader(short_header).status();
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.message().rfind("InvalidHeaderLength: ", 0), 0u);
  io::MemStreamSource huge("-", FileWithLength(kMaxHeaderSize + 1, "{}", 0));
  CHECK_EQ(ReadHeader(huge).status().code(), Code::kLimit);
}

TEST_CASE("safetensors dtype table agrees with torch's dtypes") {
  CHECK_EQ(ToTorch(Dtype::F8_E4M3), torch::DType::kFloat8E4M3FN);
  CHECK_EQ(ToTorch(Dtype::F8_E5M2), torch::DType::kFloat8E5M2);
  CHECK_EQ(ToTorch(Dtype::C64), torch::DType::kComplex64);
  CHECK_EQ(ToTorch(Dtype::F8_E8M0), torch::DType::kFloat8E8M0FNU);
  CHECK_EQ(ToTorch(Dtype::BOOL), torch::DType::kBool);
  CHECK_EQ(ToTorch(Dtype::U16), torch::DType::kUInt16);
  CHECK_EQ(ToTorch(Dtype::F4), torch::DType::kFloat4E2M1FNx2);
  CHECK_EQ(ToTorch(Dtype::F8_E4M3FNUZ), torch::DType::kFloat8E4M3FNUZ);
  CHECK_EQ(ToTorch(Dtype::F8_E5M2FNUZ), torch::DType::kFloat8E5M2FNUZ);
  CHECK_FALSE(ToTorch(Dtype::F6_E2M3).has_value());
  CHECK_FALSE(ToTorch(Dtype::F6_E3M2).has_value());
  CHECK_EQ(FromTorch(torch::DType::kFloat4E2M1FNx2), Dtype::F4);
  CHECK_FALSE(FromTorch(torch::DType::kComplex128).has_value());
  CHECK_FALSE(FromTorch(torch::DType::kComplex32).has_value());
  CHECK_EQ(FromTorch(torch::DType::kFloat8E4M3FNUZ), Dtype::F8_E4M3FNUZ);
  for (size_t i = 0; i < kDtypeCount; ++i) {
    Dtype d = static_cast<Dtype>(i);
    INFO(DtypeCode(d));
    CHECK_EQ(Info(d).dtype, d);
    CHECK_EQ(ParseDtype(DtypeCode(d)), d);
    if (std::optional<torch::DType> t = ToTorch(d)) {
      CHECK_EQ(FromTorch(*t), d);
      // Same element size, except F4: one float4_e2m1fn_x2 byte holds two.
      CHECK_EQ(torch::Info(*t).itemsize * 8, Info(d).bits * (d == Dtype::F4 ? 2 : 1));
    }
  }
  // Every torch dtype with a safetensors code maps back to it.
  for (const torch::DTypeInfo& info : torch::AllDTypes()) {
    INFO(info.name);
    if (info.safetensors.empty()) {
      CHECK_FALSE(FromTorch(info.dtype).has_value());
    } else {
      REQUIRE(FromTorch(info.dtype).has_value());
      CHECK_EQ(DtypeCode(*FromTorch(info.dtype)), info.safetensors);
      CHECK_EQ(ToTorch(*FromTorch(info.dtype)), info.dtype);
    }
  }
  CHECK_FALSE(ParseDtype("F8_E4M3FN").has_value());
  CHECK_FALSE(ParseDtype("").has_value());
}

}  // namespace
}  // namespace zerofold::safetensors

namespace zerofold::safetensors {
namespace {

// Every single-byte change to a valid file either parses to a consistent
// result or fails as corrupt or limit in the header: never a crash, and never
// a result whose tensors leave the file.
TEST_CASE("safetensors single-byte mutations fail cleanly or stay consistent") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},"c":{"dtype":"F4","shape":[2],"data_offsets":[11,12]}} )";
  const std::vector<std::byte> valid = testing::File(header, 12);
  REQUIRE(ParseFile(valid).ok());
  const unsigned char kValues[] = {0x00, 0x01, 0x09, 0x20, '"', ',', '-', '.', '0', '1', '9', ':',
                                   '[', ']', '{', '}', 'e', 0x7f, 0x80, 0xc3, 0xff};
  size_t parsed = 0;
  for (size_t pos = 0; pos < valid.size(); ++pos) {
    for (unsigned char v : kValues) {
      if (valid[pos] == std::byte(v)) continue;
      std::vector<std::byte> bytes = valid;
      bytes[pos] = std::byte(v);
      Result<safetensors::File> f = ParseFile(bytes);
      if (!f.ok()) {
        const Status& s = f.status();
        if (s.code() != Code::kCorrupt && s.code() != Code::kLimit) FAIL(s.ToString());
        if (s.record() != "header" || s.offset() > bytes.size()) FAIL(s.ToString());
        continue;
      }
      ++parsed;
      uint64_t next = 0;
      for (const TensorInfo& t : f->tensors) {
        if (t.begin != next || t.end < t.begin) FAIL("tensors do not tile: " << t.name);
        if (t.data_offset != f->data_start + t.begin) FAIL("bad data_offset: " << t.name);
        if (f->Find(t.name) != &t) FAIL("Find misses " << t.name);
        next = t.end;
      }
      if (f->data_start + next != bytes.size() || f->file_size != bytes.size()) FAIL("size");
    }
  }
  // Some mutations keep the file valid (a digit of a name, a space of padding).
  CHECK_GT(parsed, 0u);
}

TEST_CASE("F4 and float4_e2m1fn_x2 shapes: two values per byte") {
  const uint64_t f4[] = {3, 4};
  CHECK_EQ(TorchShape(Dtype::F4, f4), std::vector<int64_t>{3, 2});
  const uint64_t odd[] = {4, 3};
  CHECK_FALSE(TorchShape(Dtype::F4, odd).has_value());
  CHECK_FALSE(TorchShape(Dtype::F4, {}).has_value());
  CHECK_FALSE(TorchShape(Dtype::F6_E2M3, f4).has_value());
  CHECK_EQ(TorchShape(Dtype::U16, odd), std::vector<int64_t>{4, 3});
  const uint64_t huge[] = {uint64_t{1} << 63};
  CHECK_FALSE(TorchShape(Dtype::U8, huge).has_value());
  const int64_t x2[] = {3, 2};
  CHECK_EQ(ShapeFromTorch(Dtype::F4, x2), std::vector<uint64_t>{3, 4});
  CHECK_EQ(ShapeFromTorch(Dtype::F8_E4M3FNUZ, x2), std::vector<uint64_t>{3, 2});
  CHECK_FALSE(ShapeFromTorch(Dtype::F4, {}).has_value());
  CHECK_EQ(NoShapeReason(Dtype::F4, {}), "a float4_e2m1fn_x2 scalar has no safetensors shape: one byte holds two F4 values");
  const int64_t big[] = {INT64_MAX / 2 + 1};
  CHECK_FALSE(ShapeFromTorch(Dtype::F4, big).has_value());
  const int64_t neg[] = {-1};
  CHECK_FALSE(ShapeFromTorch(Dtype::U8, neg).has_value());
  // Round trip, and the byte size agrees with the reference's count.
  std::optional<std::vector<uint64_t>> back = ShapeFromTorch(Dtype::F4, *TorchShape(Dtype::F4, f4));
  CHECK_EQ(back, std::vector<uint64_t>{3, 4});
  CHECK_EQ(TensorByteSize(Dtype::F4, *back).bytes, 6u);
}

TEST_CASE("the dtype codes are the reference's enum, in its order") {
  // safetensors/src/tensor.rs `pub enum Dtype` at 24b0b28 (2026-05-12).
  const char* kOrder[] = {"BOOL",   "F4",    "F6_E2M3", "F6_E3M2",     "U8",          "I8",  "F8_E5M2", "F8_E4M3",
                          "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32",
                          "U32",    "F32",   "C64",     "F64",         "I64",         "U64"};
  REQUIRE_EQ(std::size(kOrder), kDtypeCount);
  for (size_t i = 0; i < kDtypeCount; ++i) CHECK_EQ(DtypeCode(static_cast<Dtype>(i)), kOrder[i]);
}

}  // namespace
}  // namespace zerofold::safetensors
