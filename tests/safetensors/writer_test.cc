#include "safetensors/writer.h"

#include <doctest/doctest.h>

#include <algorithm>  // io/mem.h uses std::min without including it
#include <cstring>
#include <string>
#include <vector>

#include "io/mem.h"
#include "safetensors/reader.h"
#include "test_files.h"

namespace zerofold::safetensors {
namespace {

using testing::PatternByte;

std::vector<std::byte> FromInts(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}

std::vector<std::byte> Pattern(size_t n, size_t seed = 0) {
  std::vector<std::byte> out;
  for (size_t i = 0; i < n; ++i) out.push_back(PatternByte(i + seed));
  return out;
}

std::vector<std::byte> LeF32(std::initializer_list<float> values) {
  std::vector<std::byte> out;
  for (float f : values) {
    uint32_t u;
    static_assert(sizeof(u) == sizeof(f));
    std::memcpy(&u, &f, sizeof(u));
    for (int i = 0; i < 4; ++i) out.push_back(std::byte((u >> (8 * i)) & 0xff));
  }
  return out;
}

// Plans, writes every tensor's bytes (data[i] for spec i) and returns the file.
std::vector<std::byte> WriteAll(const std::vector<TensorSpec>& specs,
                                const std::optional<Metadata>& metadata,
                                const std::vector<std::vector<std::byte>>& data) {
  Result<Layout> layout = PlanFile(specs, metadata);
  REQUIRE_MESSAGE(layout.ok(), layout.status().ToString());
  io::MemSink sink;
  StreamWriter w(*layout, sink);
  REQUIRE(w.WriteHeader().ok());
  for (const PlannedTensor& t : layout->tensors) {
    REQUIRE(w.WriteTensor(t.name, data[t.input_index]).ok());
  }
  REQUIRE(w.Finish().ok());
  CHECK_EQ(w.written(), layout->file_size);
  CHECK_EQ(sink.bytes().size(), layout->file_size);
  CHECK_EQ(FileSize(specs, metadata).value(), layout->file_size);
  return sink.bytes();
}

// The reference's own serialization tests (tensor.rs), byte for byte.
TEST_CASE("safetensors writer reproduces the reference's test vectors") {
  SUBCASE("test_serialization") {
    std::vector<std::byte> data = LeF32({0, 1, 2, 3, 4, 5});
    std::vector<std::byte> out =
        WriteAll({{"attn.0", Dtype::F32, {1, 2, 3}, 24}}, std::nullopt, {data});
    CHECK_EQ(out, FromInts({64,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110,
                            46,  48,  34,  58,  123, 34,  100, 116, 121, 112, 101, 34,  58,  34,
                            70,  51,  50,  34,  44,  34,  115, 104, 97,  112, 101, 34,  58,  91,
                            49,  44,  50,  44,  51,  93,  44,  34,  100, 97,  116, 97,  95,  111,
                            102, 102, 115, 101, 116, 115, 34,  58,  91,  48,  44,  50,  52,  93,
                            125, 125, 0,   0,   0,   0,   0,   0,   128, 63,  0,   0,   0,   64,
                            0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64}));
  }
  SUBCASE("test_serialization_forced_alignement") {
    std::vector<std::byte> data = LeF32({0, 1, 2, 3, 4, 5});
    std::vector<std::byte> out =
        WriteAll({{"attn0", Dtype::F32, {1, 1, 2, 3}, 24}}, std::nullopt, {data});
    CHECK_EQ(out, FromInts({72,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110,
                            48,  34,  58,  123, 34,  100, 116, 121, 112, 101, 34,  58,  34,  70,
                            51,  50,  34,  44,  34,  115, 104, 97,  112, 101, 34,  58,  91,  49,
                            44,  49,  44,  50,  44,  51,  93,  44,  34,  100, 97,  116, 97,  95,
                            111, 102, 102, 115, 101, 116, 115, 34,  58,  91,  48,  44,  50,  52,
                            93,  125, 125, 32,  32,  32,  32,  32,  32,  32,  0,   0,   0,   0,
                            0,   0,   128, 63,  0,   0,   0,   64,  0,   0,   64,  64,  0,   0,
                            128, 64,  0,   0,   160, 64}));
  }
  SUBCASE("test_serialization_fp4") {
    std::vector<std::byte> out =
        WriteAll({{"attn.0", Dtype::F4, {1, 2}, 1}}, std::nullopt, {FromInts({0})});
    CHECK_EQ(out, FromInts({64,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110,
                            46,  48,  34,  58,  123, 34,  100, 116, 121, 112, 101, 34,  58,  34,
                            70,  52,  34,  44,  34,  115, 104, 97,  112, 101, 34,  58,  91,  49,
                            44,  50,  93,  44,  34,  100, 97,  116, 97,  95,  111, 102, 102, 115,
                            101, 116, 115, 34,  58,  91,  48,  44,  49,  93,  125, 125, 32,  32,
                            32,  32,  0}));
  }
  SUBCASE("test_empty") {
    CHECK_EQ(WriteAll({}, std::nullopt, {}),
             FromInts({8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}));
    CHECK_EQ(WriteAll({}, Metadata{{"framework", "pt"}}, {}),
             FromInts({40,  0,   0,   0,   0,  0,   0,   0,   123, 34,  95,  95,
                       109, 101, 116, 97,  100, 97, 116, 97,  95,  95,  34,  58,
                       123, 34,  102, 114, 97,  109, 101, 119, 111, 114, 107, 34,
                       58,  34,  112, 116, 34,  125, 125, 32,  32,  32,  32,  32}));
  }
}

TEST_CASE("safetensors writer orders by descending dtype, then name, metadata first") {
  // Input order is deliberately scrambled; each row is (name, dtype, shape).
  const std::vector<TensorSpec> specs = {
      {"b", Dtype::BOOL, {2}, 2},       {"z", Dtype::F32, {1}, 4},   {"a", Dtype::F32, {2}, 8},
      {"h", Dtype::F16, {3}, 6},        {"i", Dtype::I64, {}, 8},    {"B", Dtype::BF16, {1}, 2},
      {"q", Dtype::F4, {2}, 1},         {"c", Dtype::C64, {1}, 8},   {"u", Dtype::U8, {0}, 0},
      {"\xc3\xa9", Dtype::U64, {1}, 8}, {"e", Dtype::U64, {1}, 8},   {"f8", Dtype::F8_E4M3, {1}, 1},
  };
  Result<Layout> layout = PlanFile(specs, Metadata{{"format", "pt"}});
  REQUIRE(layout.ok());
  std::vector<std::string> names;
  for (const PlannedTensor& t : layout->tensors) names.push_back(t.name);
  // U64 (e < é bytewise), I64, C64, F32 (a < z), BF16, F16, F8_E4M3, U8, F4, BOOL.
  CHECK_EQ(names, std::vector<std::string>{"e", "\xc3\xa9", "i", "c", "a", "z", "B", "h", "f8", "u",
                                           "q", "b"});
  // Written out by hand from the layout rules: offsets accumulate in that order.
  const std::string json =
      R"({"__metadata__":{"format":"pt"},)"
      R"("e":{"dtype":"U64","shape":[1],"data_offsets":[0,8]},)"
      "\"\xc3\xa9\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[8,16]},"
      R"("i":{"dtype":"I64","shape":[],"data_offsets":[16,24]},)"
      R"("c":{"dtype":"C64","shape":[1],"data_offsets":[24,32]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[32,40]},)"
      R"("z":{"dtype":"F32","shape":[1],"data_offsets":[40,44]},)"
      R"("B":{"dtype":"BF16","shape":[1],"data_offsets":[44,46]},)"
      R"("h":{"dtype":"F16","shape":[3],"data_offsets":[46,52]},)"
      R"("f8":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[52,53]},)"
      R"("u":{"dtype":"U8","shape":[0],"data_offsets":[53,53]},)"
      R"("q":{"dtype":"F4","shape":[2],"data_offsets":[53,54]},)"
      R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[54,56]}})";
  REQUIRE_EQ(json.size() % 8, 6u);  // so the padding below is 2 spaces
  CHECK_EQ(layout->header, json + "  ");
  CHECK_EQ(layout->data_start, 8 + json.size() + 2);
  CHECK_EQ(layout->file_size, layout->data_start + 56);
  CHECK_EQ(layout->tensors[0].input_index, 10u);
  CHECK_EQ(layout->tensors[11].input_index, 0u);
}

TEST_CASE("safetensors writer round-trips through the reader") {
  const std::vector<TensorSpec> specs = {
      {"model.embed.weight", Dtype::BF16, {4, 3}, 24},
      {"model.norm.weight", Dtype::F32, {3}, 12},
      {"step", Dtype::I64, {}, 8},
      {"mask", Dtype::BOOL, {5}, 5},
      {"empty", Dtype::F16, {0, 7}, 0},
      {"scales", Dtype::F8_E8M0, {3}, 3},
  };
  std::vector<std::vector<std::byte>> data;
  for (size_t i = 0; i < specs.size(); ++i) data.push_back(Pattern(specs[i].byte_size, 17 * i));
  const Metadata metadata = {{"format", "pt"}, {"note", "tab\there \"quoted\""}};
  std::vector<std::byte> file = WriteAll(specs, metadata, data);

  Result<safetensors::File> f = ParseFile(file);
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  CHECK_EQ(f->metadata, metadata);
  REQUIRE_EQ(f->tensors.size(), specs.size());
  CHECK_EQ(f->file_size, file.size());
  CHECK_EQ(f->header_size % 8, 0u);
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO(specs[i].name);
    const TensorInfo* t = f->Find(specs[i].name);
    REQUIRE(t != nullptr);
    CHECK_EQ(t->dtype, specs[i].dtype);
    CHECK_EQ(t->shape, specs[i].shape);
    CHECK_EQ(t->byte_size(), specs[i].byte_size);
    std::vector<std::byte> got(file.begin() + static_cast<ptrdiff_t>(t->data_offset),
                               file.begin() + static_cast<ptrdiff_t>(t->data_offset + t->byte_size()));
    CHECK_EQ(got, data[i]);
  }
  // The reader's data order is the writer's layout order.
  Result<Layout> layout = PlanFile(specs, metadata);
  for (size_t i = 0; i < specs.size(); ++i) CHECK_EQ(f->tensors[i].name, layout->tensors[i].name);
  // Writing the same input again gives the same bytes.
  CHECK_EQ(WriteAll(specs, metadata, data), file);
}

TEST_CASE("safetensors writer refuses what the reference could not read back") {
  struct Bad {
    const char* name;
    std::vector<TensorSpec> specs;
    std::optional<Metadata> metadata;
    const char* message;
  };
  const Bad kBad[] = {
      {"size mismatch", {{"w", Dtype::F32, {2}, 4}}, std::nullopt,
       "safetensors: tensor \"w\" of F32 needs 8 bytes, but 4 were given"},
      {"misaligned F4", {{"w", Dtype::F4, {3}, 2}}, std::nullopt,
       "safetensors: tensor \"w\" of F4 is not a whole number of bytes"},
      {"overflow", {{"w", Dtype::U64, {uint64_t{1} << 62}, 0}}, std::nullopt,
       "safetensors: size of tensor \"w\" overflows 64 bits"},
      {"duplicate name", {{"w", Dtype::U8, {1}, 1}, {"w", Dtype::U8, {2}, 2}}, std::nullopt,
       "safetensors: tensor name \"w\" appears twice"},
      {"duplicate name, other dtype",
       {{"w", Dtype::U8, {1}, 1}, {"x", Dtype::F16, {1}, 2}, {"w", Dtype::F32, {1}, 4}},
       std::nullopt, "safetensors: tensor name \"w\" appears twice"},
      {"metadata name", {{"__metadata__", Dtype::U8, {1}, 1}}, std::nullopt,
       "safetensors: a tensor cannot be named \"__metadata__\""},
      {"invalid UTF-8 name", {{"w\xff", Dtype::U8, {1}, 1}}, std::nullopt,
       "safetensors: tensor name \"w\\xff\" is not valid UTF-8"},
      {"duplicate metadata key", {}, Metadata{{"a", "1"}, {"b", "2"}, {"a", "3"}},
       "safetensors: __metadata__ key \"a\" appears twice"},
      {"invalid UTF-8 metadata", {}, Metadata{{"a", "\xc0"}},
       "safetensors: __metadata__ entry \"a\" is not valid UTF-8"},
  };
  for (const Bad& c : kBad) {
    INFO(c.name);
    Result<Layout> layout = PlanFile(c.specs, c.metadata);
    REQUIRE_FALSE(layout.ok());
    CHECK_EQ(layout.status().code(), Code::kInvalidArgument);
    CHECK_EQ(layout.status().message(), c.message);
    CHECK_EQ(FileSize(c.specs, c.metadata).status().code(), Code::kInvalidArgument);
  }
  // Nine tensors of 2^61 - 1 bytes (the most bits fit in 64) overflow the total.
  std::vector<TensorSpec> huge;
  const uint64_t most = (uint64_t{1} << 61) - 1;
  for (char c = 'a'; c < 'a' + 9; ++c) huge.push_back({std::string(1, c), Dtype::U8, {most}, most});
  CHECK_EQ(PlanFile(huge, std::nullopt).status().message(),
           "safetensors: the tensors' total size overflows 64 bits");
  // Eight fit in the data size (2^64 - 8) but not with the header before them.
  huge.pop_back();
  CHECK_EQ(PlanFile(huge, std::nullopt).status().message(),
           "safetensors: the file size overflows 64 bits");
  huge.pop_back();
  Result<Layout> seven = PlanFile(huge, std::nullopt);
  REQUIRE(seven.ok());
  CHECK_EQ(seven->tensors.back().end, 7 * most);
  CHECK_EQ(FileSize(huge, std::nullopt).value(), seven->data_start + 7 * most);
}

TEST_CASE("safetensors writer refuses a header past the reference's HeaderTooLarge") {
  // tensor.rs test_invalid_header_size_serialization: a MAX_HEADER_SIZE value.
  Metadata big = {{"very_large_metadata", std::string(kMaxHeaderSize, 'a')}};
  Result<Layout> layout = PlanFile({}, big);
  REQUIRE_FALSE(layout.ok());
  CHECK_EQ(layout.status().code(), Code::kInvalidArgument);
  CHECK(layout.status().message().find("HeaderTooLarge") != std::string::npos);
  // At the limit is fine: {"__metadata__":{"k":"..."}} is 25 bytes plus the value.
  Metadata fits = {{"k", std::string(kMaxHeaderSize - 25, 'a')}};
  layout = PlanFile({}, fits);
  REQUIRE(layout.ok());
  CHECK_EQ(layout->header.size(), kMaxHeaderSize);
}

TEST_CASE("safetensors stream writer checks order and counts") {
  const std::vector<TensorSpec> specs = {{"a", Dtype::F32, {2}, 8}, {"b", Dtype::U8, {3}, 3}};
  Result<Layout> layout = PlanFile(specs, std::nullopt);
  REQUIRE(layout.ok());
  REQUIRE_EQ(layout->tensors[0].name, "a");

  SUBCASE("pieces of any size, in order") {
    io::MemSink sink;
    StreamWriter w(*layout, sink);
    REQUIRE(w.WriteHeader().ok());
    std::vector<std::byte> a = Pattern(8);
    REQUIRE(w.BeginTensor("a").ok());
    REQUIRE(w.Append(std::span<const std::byte>(a).first(3)).ok());
    REQUIRE(w.Append(std::span<const std::byte>(a).subspan(3)).ok());
    REQUIRE(w.Append({}).ok());
    REQUIRE(w.WriteTensor("b", Pattern(3, 8)).ok());
    REQUIRE(w.Finish().ok());
    Result<safetensors::File> f = ParseFile(sink.bytes());
    REQUIRE(f.ok());
    CHECK_EQ(f->tensors[1].data_offset, layout->data_start + 8);
  }
  auto misuse = [&](auto steps) {
    io::MemSink sink;
    StreamWriter w(*layout, sink);
    Status s = steps(w);
    CHECK_EQ(s.code(), Code::kInvalidArgument);
    // Sticky: the next call returns the same error.
    CHECK_EQ(w.Finish().message(), s.message());
    return s.message();
  };
  CHECK_EQ(misuse([](StreamWriter& w) { return w.BeginTensor("a"); }),
           "safetensors: BeginTensor before WriteHeader");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             return w.WriteHeader();
           }),
           "safetensors: WriteHeader called twice");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             return w.BeginTensor("b");
           }),
           "safetensors: tensor \"a\" is next in the layout, not \"b\"");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             return w.Append(Pattern(1));
           }),
           "safetensors: Append before BeginTensor");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             w.BeginTensor("a").IgnoreError();
             return w.Append(Pattern(9));
           }),
           "safetensors: tensor \"a\" has 8 bytes left, 9 were appended");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             w.BeginTensor("a").IgnoreError();
             w.Append(Pattern(5)).IgnoreError();
             return w.BeginTensor("b");
           }),
           "safetensors: tensor \"a\" still needs 3 bytes when \"b\" begins");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             return w.WriteTensor("a", Pattern(7));
           }),
           "safetensors: tensor \"a\" was given 7 bytes, it needs 8");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             w.WriteTensor("a", Pattern(8)).IgnoreError();
             return w.Finish();
           }),
           "safetensors: 1 tensors were not written, from \"b\"");
  CHECK_EQ(misuse([](StreamWriter& w) {
             w.WriteHeader().IgnoreError();
             w.WriteTensor("a", Pattern(8)).IgnoreError();
             w.WriteTensor("b", Pattern(3)).IgnoreError();
             return w.BeginTensor("c");
           }),
           "safetensors: tensor \"c\" is not in the layout");
}

// A sink that fails its Nth Append with kIO.
class FailingSink final : public Sink {
 public:
  explicit FailingSink(int fail_at) : fail_at_(fail_at) {}
  Status Append(std::span<const std::byte> data) override {
    if (++calls_ == fail_at_) return Status::IOError("disk full");
    pos_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  int fail_at_;
  int calls_ = 0;
  uint64_t pos_ = 0;
  std::string name_ = "out.safetensors";
};

TEST_CASE("safetensors stream writer passes sink failures through and stays failed") {
  const std::vector<TensorSpec> specs = {{"a", Dtype::U8, {2}, 2}};
  Result<Layout> layout = PlanFile(specs, std::nullopt);
  REQUIRE(layout.ok());
  for (int fail_at = 1; fail_at <= 3; ++fail_at) {
    INFO(fail_at);
    FailingSink sink(fail_at);
    StreamWriter w(*layout, sink);
    Status s = w.WriteHeader();
    if (s.ok()) s = w.WriteTensor("a", Pattern(2));
    CHECK_EQ(s.code(), Code::kIO);
    CHECK_EQ(s.message(), "disk full");
    CHECK_EQ(w.Finish().code(), Code::kIO);
  }
}

}  // namespace
}  // namespace zerofold::safetensors
