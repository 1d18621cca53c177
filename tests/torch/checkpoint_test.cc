#include "torch/checkpoint.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "io/cursor.h"
#include "io/mem.h"
#include "pickle_writer.h"
#include "test_files.h"
#include "torch/read.h"
#include "torch/storage_source.h"
#include "torch/tensor_recognizer.h"
#include "zip/crc32.h"
#include "zip/writer.h"

namespace zerofold::torch {
namespace {

using testing::PickleWriter;

using testing::FixtureBytes;
using testing::Root;

std::vector<std::byte> Bytes(std::string_view s) {
  std::span<const std::byte> b = io::AsBytes(s);
  return {b.begin(), b.end()};
}

// A RandomSource that remembers every range read, to show that reading a
// checkpoint touches no storage bytes.
class RecordingSource final : public RandomSource {
 public:
  RecordingSource(std::string name, std::vector<std::byte> bytes) : mem_(std::move(name), std::move(bytes)) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.push_back({offset, offset + dst.size()});
    return mem_.ReadAt(offset, dst);
  }
  uint64_t size() const override { return mem_.size(); }
  const std::string& name() const override { return mem_.name(); }
  const std::vector<ByteRange>& reads() const { return reads_; }
  const std::vector<std::byte>& bytes() const { return mem_.bytes(); }

 private:
  io::MemSource mem_;
  mutable std::mutex mu_;
  mutable std::vector<ByteRange> reads_;
};

std::string Dims(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

// The lines tests/torch/make_expected.py writes for the same file.
std::vector<std::string> Describe(const Checkpoint& c) {
  std::vector<std::string> out = {"format\t" + std::string(FormatName(c.format))};
  for (const Storage& s : c.storages) {
    out.push_back("storage\t" + s.key + "\t" + std::string(s.untyped ? "uint8" : Info(s.dtype).name) + "\t" +
                  std::to_string(s.nbytes) + "\t" + s.record + "\t" + std::to_string(s.data_offset) + "\t" +
                  std::to_string(s.record_size));
  }
  for (const Tensor& t : c.tensors) {
    out.push_back("tensor\t" + t.name + "\t" + std::string(Info(t.dtype).name) + "\t" + Dims(t.shape) + "\t" +
                  Dims(t.stride) + "\t" + std::to_string(t.storage_offset) + "\t" + c.storages[t.storage].key + "\t" +
                  (t.requires_grad ? "1" : "0") + "\t" + (t.is_parameter ? "1" : "0"));
  }
  return out;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

std::vector<std::pair<std::string, std::string>> ExpectedFiles() {
  std::vector<std::pair<std::string, std::string>> out;  // fixture (repo-relative), expected path
  for (const auto& e : std::filesystem::directory_iterator(Root() + "/tests/torch/expected")) {
    std::string name = e.path().filename().string();
    if (!name.ends_with(".txt")) continue;
    std::string rel;
    for (size_t i = 0; i + 4 < name.size(); ++i) {  // "__" stands for "/"
      if (name.compare(i, 2, "__") == 0) {
        rel += '/';
        ++i;
      } else {
        rel += name[i];
      }
    }
    out.push_back({"fixtures/" + rel, e.path().string()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("every fixture reads as real torch loads it: storages, records, offsets, tensor views") {
  std::vector<std::pair<std::string, std::string>> files = ExpectedFiles();
  CHECK_EQ(files.size(), 36u);  // 18 deepspeed, 3 hf, 15 torch
  for (const auto& file : files) {
    // Plain references: clang 14 cannot capture structured bindings (CAPTURE).
    const std::string& fixture = file.first;
    const std::string& expected_path = file.second;
    CAPTURE(fixture);
    RecordingSource src(fixture, FixtureBytes(fixture));
    Result<Checkpoint> c = ReadCheckpoint(src);
    REQUIRE_MESSAGE(c.ok(), c.status().ToString());
    std::vector<std::string> got = Describe(*c);
    std::vector<std::string> want = Lines(expected_path);
    for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
      CAPTURE(i);
      CHECK_EQ((i < got.size() ? got[i] : "<missing>"), (i < want.size() ? want[i] : "<missing>"));
    }
    // Storage bytes are located, never read. Reads that run to the end of
    // the file (the zip reader's search for the end records, the legacy
    // reader's first chunk, which cover whole small files) and reads of a
    // local header (a fixed window that may reach into the data) are not
    // reads of storage bytes.
    std::vector<uint64_t> local_headers;
    if (c->format == Format::kTorchZip) {
      io::MemSource again(fixture, src.bytes());
      Result<zip::Archive> ar = zip::ReadArchive(again);
      REQUIRE(ar.ok());
      for (const zip::Entry& e : ar->entries) local_headers.push_back(e.header_offset);
    }
    for (const Storage& s : c->storages) {
      for (const ByteRange& r : src.reads()) {
        if (r.end >= src.size()) continue;
        if (std::find(local_headers.begin(), local_headers.end(), r.begin) != local_headers.end()) continue;
        bool overlaps = r.begin < s.data_offset + s.nbytes && s.data_offset < r.end;
        CHECK_MESSAGE(!overlaps, s.record, " read at [", r.begin, ", ", r.end, ")");
      }
    }
    // The patch points: args[0] is the tensor's pid naming its storage, args[1] its offset.
    for (const Tensor& t : c->tensors) {
      CAPTURE(t.name);
      REQUIRE_EQ(c->graph.kind(t.args), pickle::Kind::kTuple);
      CHECK_EQ(c->graph.Items(t.args)[0], t.pid);
      REQUIRE_EQ(c->graph.kind(t.pid), pickle::Kind::kPersId);
      Result<std::optional<StoragePid>> pid = ParseStoragePid(c->graph, t.pid, c->format);
      REQUIRE(pid.ok());
      CHECK_EQ((*pid)->key, c->storages[t.storage].key);
      CHECK_EQ(c->graph.AsInt(c->graph.Items(t.args)[1]), t.storage_offset);
    }
  }
}

TEST_CASE("zip records other than data.pkl and data/ are kept; the top folder is the archive's") {
  io::MemSource src("x", FixtureBytes("fixtures/torch/zip_rewritten.pt"));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE(c.ok());
  CHECK_EQ(c->top_folder, "zip_rewritten");
  std::vector<std::string> names;
  for (const zip::Entry& e : c->other_records) names.push_back(e.name);
  CHECK_EQ(names, std::vector<std::string>{"zip_rewritten/version"});
  CHECK_FALSE(c->big_endian);
  CHECK(c->unsafe_globals.empty());
  io::MemSource ds("y", FixtureBytes("fixtures/deepspeed/zero1_ws2_fp16/ckpt/global_step2/"
                                      "zero_pp_rank_0_mp_rank_00_optim_states.pt"));
  Result<Checkpoint> d = ReadCheckpoint(ds);
  REQUIRE(d.ok());
  CHECK_EQ(d->top_folder, "zero_pp_rank_0_mp_rank_00_optim_states");
  CHECK_EQ(d->pickle_offset % 64, 0u);
  CHECK_EQ(d->pickle_size, 2414u);
}

// --- archives built here --------------------------------------------------

struct Record {
  std::string name;  // relative to "archive/"
  std::string data;
};

std::vector<std::byte> TorchZip(const std::vector<Record>& records, std::string_view top = "archive") {
  io::MemSink sink;
  zip::Writer w(&sink);
  for (const Record& r : records) {
    Status s = w.AddEntry(std::string(top) + "/" + r.name, io::AsBytes(r.data));
    REQUIRE(s.ok());
  }
  REQUIRE(w.Finish().ok());
  return sink.bytes();
}

std::string Filler(size_t n, char base) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(base + i % 7);
  return s;
}

TEST_CASE("data.pkl written byte by byte: float8 and uint16/32/64 on untyped storages, parameter with state") {
  PickleWriter p;
  p.Proto(2).EmptyDict().Mark();
  p.Str("f8").TensorV3("0", 32, 0, {4, 8}, {8, 1}, "float8_e4m3fn");
  p.Str("e5m2").TensorV3("1", 6, 2, {2, 2}, {2, 1}, "float8_e5m2");
  p.Str("u16").TensorV3("2", 12, 0, {6}, {1}, "uint16");
  p.Str("u32").TensorV3("2", 12, 1, {2}, {1}, "uint32");
  p.Str("u64").TensorV3("3", 16, 0, {2}, {1}, "uint64");
  p.Str("p").Global("torch._utils", "_rebuild_parameter_with_state").Mark();
  p.TensorV2("FloatStorage", "4", 6, 0, {2, 3}, {3, 1}).Bool(true).EmptyOrderedDict();
  p.EmptyDict().Str("tag").Str("lora").SetItem();
  p.Tuple().Reduce();
  p.SetItems().Stop();
  std::vector<Record> records = {{"data.pkl", p.str()},      {"data/0", Filler(32, 'a')}, {"data/1", Filler(6, 'b')},
                                 {"data/2", Filler(12, 'c')}, {"data/3", Filler(16, 'd')}, {"data/4", Filler(24, 'e')},
                                 {"version", "3\n"},          {"byteorder", "little"}};
  io::MemSource src("built.pt", TorchZip(records));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  CHECK_EQ(c->format, Format::kTorchZip);
  std::vector<std::string> got = Describe(*c);
  std::vector<std::string> tensors(got.begin() + 1 + 5, got.end());
  CHECK_EQ(tensors, std::vector<std::string>{
                        "tensor\tf8\tfloat8_e4m3fn\t4,8\t8,1\t0\t0\t0\t0",
                        "tensor\te5m2\tfloat8_e5m2\t2,2\t2,1\t2\t1\t0\t0",
                        "tensor\tu16\tuint16\t6\t1\t0\t2\t0\t0",
                        "tensor\tu32\tuint32\t2\t1\t1\t2\t0\t0",
                        "tensor\tu64\tuint64\t2\t1\t0\t3\t0\t0",
                        "tensor\tp\tfloat32\t2,3\t3,1\t0\t4\t1\t1",
                    });
  REQUIRE_EQ(c->storages.size(), 5u);
  const char* keys[] = {"0", "1", "2", "3", "4"};
  const uint64_t nbytes[] = {32, 6, 12, 16, 24};
  const DType dtypes[] = {DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kUInt16, DType::kUInt64, DType::kFloat32};
  for (size_t i = 0; i < 5; ++i) {
    const Storage& s = c->storages[i];
    CAPTURE(s.key);
    CHECK_EQ(s.key, keys[i]);
    CHECK_EQ(s.untyped, i < 4);
    CHECK_EQ(s.dtype, dtypes[i]);
    CHECK_EQ(s.nbytes, nbytes[i]);
    CHECK_EQ(s.record, "archive/data/" + std::string(keys[i]));
    CHECK_EQ(s.record_size, nbytes[i]);
    CHECK_EQ(s.data_offset % 64, 0u);  // torch's layout, kept by zip::Writer
    // The offset points at the record's bytes.
    std::string_view at = io::AsChars(std::span(src.bytes()).subspan(s.data_offset, s.nbytes));
    CHECK_EQ(at, records[i + 1].data);
  }
  CHECK_EQ(c->tensors[5].path.size(), 1u);
  std::vector<std::string> others;
  for (const zip::Entry& e : c->other_records) others.push_back(e.name);
  CHECK_EQ(others, std::vector<std::string>{"archive/version", "archive/byteorder"});
}

struct BadZip {
  const char* name;
  std::vector<Record> records;
  Code code;
  const char* record;   // expected Status::record
  const char* message;  // expected Status::message
};

std::string OneTensor(std::initializer_list<int64_t> size, std::initializer_list<int64_t> stride, int64_t offset,
                      int64_t numel = 36, const char* key = "0") {
  PickleWriter p;
  p.Proto(2).EmptyDict().Str("w").TensorV2("FloatStorage", key, numel, offset, size, stride).SetItem().Stop();
  return p.str();
}

TEST_CASE("bad archives: exact codes, records and messages") {
  std::string ok_pickle = OneTensor({6, 6}, {6, 1}, 0);
  std::string floats = Filler(144, 'x');
  std::string trailing = ok_pickle + "junk";
  PickleWriter two_types;
  two_types.Proto(2).Mark().StoragePid("FloatStorage", "0", 36).StoragePid("HalfStorage", "0", 36).Tuple().Stop();
  const std::vector<BadZip> cases = {
      {"record shorter than its storage", {{"data.pkl", ok_pickle}, {"data/0", Filler(100, 'x')}}, Code::kCorrupt,
       "archive/data/0", "record archive/data/0 has 100 bytes, storage declares 144"},
      {"missing record", {{"data.pkl", OneTensor({6}, {1}, 0, 36, "7")}, {"data/0", floats}}, Code::kCorrupt,
       "archive/data/7", "storage '7' has no record archive/data/7"},
      {"view leaves its storage", {{"data.pkl", OneTensor({10}, {1}, 30)}, {"data/0", floats}}, Code::kCorrupt, "w",
       "view bytes [120, 160) leave storage '0' of 144 bytes"},
      {"strided view leaves its storage", {{"data.pkl", OneTensor({6, 6}, {7, 1}, 0)}, {"data/0", floats}},
       Code::kCorrupt, "w", "view bytes [0, 164) leave storage '0' of 144 bytes"},
      {"stride overflows", {{"data.pkl", OneTensor({4, 1}, {int64_t{1} << 62, 1}, 0)}, {"data/0", floats}},
       Code::kCorrupt, "w", "view extent overflows at dim 0 (size 4, stride 4611686018427387904)"},
      {"huge shape with zero strides", {{"data.pkl", OneTensor({1ll << 40, 1ll << 40}, {0, 0}, 0)}, {"data/0", floats}},
       Code::kCorrupt, "w", "tensor of shape [1099511627776, 1099511627776] has more than 2^63 bytes"},
      {"negative stride", {{"data.pkl", OneTensor({6}, {-1}, 5)}, {"data/0", floats}}, Code::kCorrupt, "w",
       "view stride[0] is negative: -1"},
      {"negative size", {{"data.pkl", OneTensor({-6}, {1}, 0)}, {"data/0", floats}}, Code::kCorrupt, "w",
       "view size[0] is negative: -6"},
      {"storage declared with two types", {{"data.pkl", two_types.str()}, {"data/0", floats}}, Code::kCorrupt,
       "archive/data.pkl",
       "storage '0' is declared as FloatStorage of 36 elements and as HalfStorage of 36 elements"},
      {"no data.pkl", {{"data/0", floats}, {"version", "3\n"}}, Code::kCorrupt, "archive/data.pkl",
       "the archive has no archive/data.pkl"},
      {"bytes after STOP", {{"data.pkl", trailing}, {"data/0", floats}}, Code::kCorrupt, "archive/data.pkl",
       "archive/data.pkl has 4 bytes after STOP"},
      {"TorchScript constants", {{"data.pkl", ok_pickle}, {"data/0", floats}, {"constants.pkl", "\x80\x02)."}},
       Code::kUnsupported, "archive/constants.pkl", "a TorchScript archive (torch.jit.save), not a torch.save checkpoint"},
      {"TorchScript code", {{"code/__torch__/m.py", "x"}, {"data.pkl", ok_pickle}, {"data/0", floats}},
       Code::kUnsupported, "archive/code/__torch__/m.py",
       "a TorchScript archive (torch.jit.save), not a torch.save checkpoint"},
      {"byteorder neither little nor big", {{"data.pkl", ok_pickle}, {"data/0", floats}, {"byteorder", "middle"}},
       Code::kCorrupt, "archive/byteorder", "byteorder record says \"middle\", expected \"little\" or \"big\""},
  };
  for (const BadZip& c : cases) {
    CAPTURE(c.name);
    io::MemSource src("bad.pt", TorchZip(c.records));
    Result<Checkpoint> r = ReadCheckpoint(src);
    REQUIRE_FALSE(r.ok());
    CHECK_EQ(r.status().code(), c.code);
    CHECK_EQ(r.status().record(), c.record);
    CHECK_EQ(r.status().message(), c.message);
    CHECK_EQ(r.status().path(), "bad.pt");
  }
}

TEST_CASE("the offset of a short record is its first byte") {
  std::vector<std::byte> bytes = TorchZip({{"data.pkl", OneTensor({6, 6}, {6, 1}, 0)}, {"data/0", Filler(100, 'x')}});
  io::MemSource src("bad.pt", bytes);
  Result<zip::Archive> ar = zip::ReadArchive(src);
  REQUIRE(ar.ok());
  REQUIRE(ar->Find("data/0"));
  const Result<zip::Entry> located = zip::LocateEntry(src, *ar->Find("data/0"));
  REQUIRE(located.ok());
  const zip::Entry* e = &*located;
  Status s = ReadCheckpoint(src).status();
  CHECK_EQ(s.offset(), e->data_offset);
  CHECK_EQ(s.ToString(), "bad.pt: archive/data/0 @ " + std::to_string(e->data_offset) +
                             ": corrupt: record archive/data/0 has 100 bytes, storage declares 144");
}

TEST_CASE("byteorder big is read and flagged; a view may end exactly at its storage's end") {
  io::MemSource src("be.pt", TorchZip({{"data.pkl", OneTensor({6, 6}, {6, 1}, 0)},
                                       {"data/0", Filler(150, 'x')},
                                       {"byteorder", "big"}},
                                      "other_top"));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE(c.ok());
  CHECK(c->big_endian);
  CHECK_EQ(c->top_folder, "other_top");
  CHECK_EQ(c->storages[0].record, "other_top/data/0");
  CHECK_EQ(c->storages[0].record_size, 150u);  // longer records are fine
  CHECK_EQ(c->storages[0].nbytes, 144u);
}

TEST_CASE("files that are not torch.save checkpoints") {
  struct Case {
    const char* name;
    std::string bytes;
    Code code;
    uint64_t offset;
    const char* message_start;
  };
  std::string tar(512, '\0');
  tar.replace(0, 8, "storages");
  tar.replace(257, 6, std::string("ustar\0", 6));
  const std::vector<Case> cases = {
      {"preview release", "PYTORCH1" + std::string(100, 'x'), Code::kUnsupported, 0,
       "an archive of torch's preview release"},
      {"tar", tar, Code::kUnsupported, 257, "a tar archive"},
      {"empty", "", Code::kCorrupt, 0, "not a torch file"},
      {"text", "hello, world\n", Code::kCorrupt, 0, "not a torch file"},
      {"a pickle of something else", std::string("\x80\x02K\x05.", 5), Code::kCorrupt, 0,
       "not a torch file: neither a zip archive nor a legacy torch pickle (first pickle is not the legacy magic number)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    io::MemSource src("f", Bytes(c.bytes));
    Status s = ReadCheckpoint(src).status();
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.offset(), c.offset);
    CHECK(std::string_view(s.message()).starts_with(c.message_start));
  }
}

TEST_CASE("a deflated rewrite reads as its stored original, storage bytes inflated") {
  io::MemSource stored("state_dict.pt", FixtureBytes("fixtures/torch/state_dict.pt"));
  io::MemSource deflated("deflated.pt", FixtureBytes("fixtures/bad/deflated.pt"));
  Result<Checkpoint> a = ReadCheckpoint(stored);
  Result<Checkpoint> b = ReadCheckpoint(deflated);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  REQUIRE_MESSAGE(b.ok(), b.status().ToString());
  REQUIRE_EQ(a->tensors.size(), b->tensors.size());
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    CHECK_EQ(a->tensors[i].name, b->tensors[i].name);
    CHECK_EQ(a->tensors[i].shape, b->tensors[i].shape);
  }
  REQUIRE_EQ(a->storages.size(), b->storages.size());
  StorageSources sa(stored), sb(deflated);
  size_t deflated_storages = 0;
  for (size_t i = 0; i < a->storages.size(); ++i) {
    CAPTURE(a->storages[i].key);
    CHECK_EQ(a->storages[i].method, 0);
    deflated_storages += b->storages[i].method == 8;
    const RandomSource* x = sa.For(a->storages[i]).value();
    std::vector<std::byte> bx(a->storages[i].nbytes), by(b->storages[i].nbytes);
    REQUIRE(ReadExactAt(*x, 0, bx).ok());
    const RandomSource* y = sb.For(b->storages[i]).value();
    REQUIRE(ReadExactAt(*y, 0, by).ok());
    CHECK(bx == by);
  }
  CHECK(sb.Finish().ok());
  CHECK_EQ(deflated_storages, b->storages.size());
}

TEST_CASE("fixtures/bad: TorchScript is unsupported, unsafe globals are listed") {
  io::MemSource ts("torchscript.pt", FixtureBytes("fixtures/bad/torchscript.pt"));
  Status s = ReadCheckpoint(ts).status();
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.record(), "torchscript/code/__torch__/zerofold_fixture_tiny.py");
  CHECK_EQ(s.message(), "a TorchScript archive (torch.jit.save), not a torch.save checkpoint");
  io::MemSource unsafe("unsafe.pt", FixtureBytes("fixtures/bad/unsafe_os_system.pt"));
  Result<Checkpoint> c = ReadCheckpoint(unsafe);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  CHECK_EQ(c->unsafe_globals, std::vector<std::string>{"posix.system"});
  REQUIRE_EQ(c->tensors.size(), 1u);
  CHECK_EQ(c->tensors[0].name, "weight");
  CHECK_EQ(c->tensors[0].shape, std::vector<int64_t>{4});
}

TEST_CASE("every strict prefix of a zip checkpoint fails cleanly") {
  std::vector<std::byte> bytes = FixtureBytes("fixtures/torch/bare_tensor.pt");
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    io::MemSource src("p", std::span<const std::byte>(bytes.data(), n));
    Status s = ReadCheckpoint(src).status();
    CHECK((s.code() == Code::kCorrupt || s.code() == Code::kUnsupported));
  }
  io::MemSource whole("p", bytes);
  CHECK(ReadCheckpoint(whole).ok());
}

// Damaged pickles must fail with a bad-input code (or still read), never
// crash or report an internal error. Zip: the central directory's CRC is
// repaired so the damage reaches the decoder and the recognizer.
bool BadInputCode(Code c) {
  return c == Code::kOk || c == Code::kCorrupt || c == Code::kUnsupported || c == Code::kLimit;
}

TEST_CASE("every byte of data.pkl changed: bad input codes only") {
  std::vector<std::byte> bytes = FixtureBytes("fixtures/torch/tied_weights.pt");
  io::MemSource src("t", bytes);
  Result<zip::Archive> ar = zip::ReadArchive(src);
  REQUIRE(ar.ok());
  REQUIRE(ar->Find("data.pkl"));
  const Result<zip::Entry> located = zip::LocateEntry(src, *ar->Find("data.pkl"));
  REQUIRE(located.ok());
  const zip::Entry* pkl = &*located;
  // The central directory header of data.pkl: signature, then CRC-32 at +16.
  std::string_view text = io::AsChars(bytes);
  const std::string signature("PK\x01\x02", 4);  // APPNOTE 4.3.12; the name follows 46 bytes of header
  size_t header = std::string::npos;
  for (size_t at = text.find(signature); at != std::string::npos; at = text.find(signature, at + 4)) {
    if (text.substr(at + 46, pkl->name.size()) == pkl->name) header = at;
  }
  REQUIRE(header != std::string::npos);
  int ok = 0, failed = 0;
  for (uint64_t i = 0; i < pkl->size; ++i) {
    for (int flip : {0x01, 0x80, 0xff}) {
      std::vector<std::byte> damaged = bytes;
      damaged[pkl->data_offset + i] ^= std::byte(flip);
      uint32_t crc = zip::Crc32(0, std::span(damaged).subspan(pkl->data_offset, pkl->size));
      io::EncodeU32le(damaged.data() + header + 16, crc);
      io::MemSource d("t", damaged);
      Status s = ReadCheckpoint(d).status();
      CAPTURE(i);
      CAPTURE(flip);
      CHECK_MESSAGE(BadInputCode(s.code()), s.ToString());
      (s.ok() ? ok : failed)++;
    }
  }
  CHECK_GT(failed, 0);
  CHECK_GT(ok, 0);  // e.g. a changed letter in a key still reads
}

TEST_CASE("every byte of a legacy file's pickles changed: bad input codes only") {
  std::vector<std::byte> bytes = FixtureBytes("fixtures/torch/legacy_views_tied.pt");
  io::MemSource src("l", bytes);
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE(c.ok());
  uint64_t pickles_end = c->storages[0].data_offset - 8;
  for (uint64_t i = 0; i < pickles_end; ++i) {
    for (int flip : {0x01, 0x80, 0xff}) {
      std::vector<std::byte> damaged = bytes;
      damaged[i] ^= std::byte(flip);
      io::MemSource d("l", damaged);
      Status s = ReadCheckpoint(d).status();
      CAPTURE(i);
      CAPTURE(flip);
      CHECK_MESSAGE(BadInputCode(s.code()), s.ToString());
    }
  }
}

// --- legacy files built here -----------------------------------------------

struct LegacyFile {
  std::string head;     // magic, protocol, sys_info
  std::string object;   // the object pickle
  std::string keys;     // the key list pickle
  std::string storages; // counts and bytes
  std::string bytes() const { return head + object + keys + storages; }
};

std::string PickleOf(const std::function<void(PickleWriter&)>& body) {
  PickleWriter p;
  p.Proto(2);
  body(p);
  p.Stop();
  return p.str();
}

std::string LegacyHead(int64_t protocol = 1001) {
  std::string magic = PickleOf([](PickleWriter& p) { p.Long1("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"); });
  std::string version = PickleOf([&](PickleWriter& p) { p.Int(protocol); });
  std::string sys_info = PickleOf([](PickleWriter& p) {
    p.EmptyDict().Mark().Str("protocol_version").Int(1001).Str("little_endian").Bool(true);
    p.Str("type_sizes").EmptyDict().Mark().Str("short").Int(2).Str("int").Int(4).Str("long").Int(4).SetItems();
    p.SetItems();
  });
  return magic + version + sys_info;
}

std::string KeyList(std::initializer_list<const char*> keys) {
  return PickleOf([&](PickleWriter& p) {
    p.EmptyList().Mark();
    for (const char* k : keys) p.Str(k);
    p.Appends();
  });
}

std::string CountAndBytes(uint64_t count, size_t nbytes, char fill) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((count >> (8 * i)) & 0xff);
  return s + std::string(nbytes, fill);
}

// {'a': 3 floats of storage "140", 'b': 2 floats at offset 1 of it,
//  'c': 4 int64 of storage "9"}
LegacyFile GoodLegacy() {
  LegacyFile f;
  f.head = LegacyHead();
  f.object = PickleOf([](PickleWriter& p) {
    p.EmptyDict().Mark();
    p.Str("a").TensorV2("FloatStorage", "140", 3, 0, {3}, {1}, false, /*legacy=*/true);
    p.Str("b").TensorV2("FloatStorage", "140", 3, 1, {2}, {1}, false, /*legacy=*/true);
    p.Str("c").TensorV2("LongStorage", "9", 4, 0, {2, 2}, {2, 1}, false, /*legacy=*/true);
    p.SetItems();
  });
  f.keys = KeyList({"140", "9"});
  f.storages = CountAndBytes(3, 12, 'f') + CountAndBytes(4, 32, 'l');
  return f;
}

TEST_CASE("a legacy file written byte by byte: records, offsets, views") {
  LegacyFile f = GoodLegacy();
  io::MemSource src("old.pt", Bytes(f.bytes()));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  uint64_t base = f.head.size() + f.object.size() + f.keys.size();
  CHECK_EQ(Describe(*c), std::vector<std::string>{
                             "format\ttorch-legacy",
                             "storage\t140\tfloat32\t12\tstorage 140\t" + std::to_string(base + 8) + "\t12",
                             "storage\t9\tint64\t32\tstorage 9\t" + std::to_string(base + 8 + 12 + 8) + "\t32",
                             "tensor\ta\tfloat32\t3\t1\t0\t140\t0\t0",
                             "tensor\tb\tfloat32\t2\t1\t1\t140\t0\t0",
                             "tensor\tc\tint64\t2,2\t2,1\t0\t9\t0\t0",
                         });
  CHECK_EQ(c->pickle_offset, f.head.size());
  CHECK_EQ(c->pickle_size, f.object.size());
  CHECK(c->top_folder.empty());
  CHECK(c->other_records.empty());
}

TEST_CASE("bad legacy files: exact codes, records and messages") {
  struct Case {
    const char* name;
    std::function<void(LegacyFile&)> mutate;
    Code code;
    const char* record;
    const char* message;
    std::function<uint64_t(const LegacyFile&)> offset;
  };
  auto at_storages = [](const LegacyFile& f) { return f.head.size() + f.object.size() + f.keys.size(); };
  const std::vector<Case> cases = {
      {"count disagrees", [](LegacyFile& f) { f.storages = CountAndBytes(2, 12, 'f') + CountAndBytes(4, 32, 'l'); },
       Code::kCorrupt, "storage 140", "record storage 140 counts 2 elements, storage declares 3", at_storages},
      {"data past the end", [](LegacyFile& f) { f.storages.resize(f.storages.size() - 5); }, Code::kCorrupt,
       "storage 9", "record storage 9 has 27 bytes, storage declares 32",
       [&](const LegacyFile& f) { return at_storages(f) + 8 + 12 + 8; }},
      {"count truncated", [](LegacyFile& f) { f.storages.resize(8 + 12 + 3); }, Code::kCorrupt, "storage 9", nullptr,
       [&](const LegacyFile& f) { return at_storages(f) + 8 + 12 + 3; }},
      {"key list names an unknown key", [](LegacyFile& f) { f.keys = KeyList({"140", "9", "77"}); }, Code::kCorrupt,
       "storage 77", "the storage key list names '77', which no persistent id declares",
       [&](const LegacyFile& f) { return at_storages(f) + 8 + 12 + 8 + 32; }},
      {"key listed twice", [](LegacyFile& f) { f.keys = KeyList({"140", "140"}); }, Code::kCorrupt, "storage 140",
       "storage key '140' is listed twice", [&](const LegacyFile& f) { return at_storages(f) + 8 + 12; }},
      {"storage missing from the key list", [](LegacyFile& f) { f.keys = KeyList({"140"}); }, Code::kCorrupt,
       "storage 9", "storage '9' is not in the storage key list, so the file holds no bytes for it",
       [](const LegacyFile& f) { return f.head.size() + f.object.size(); }},
      {"other protocol version", [](LegacyFile& f) { f.head = LegacyHead(1000); }, Code::kCorrupt,
       "protocol version pickle", "legacy protocol version is 1000, expected 1001",
       [](const LegacyFile&) { return uint64_t{15}; }},  // after PROTO, LONG1 of 10 bytes, STOP,
      {"view metadata", [](LegacyFile& f) {
         f.object = PickleOf([](PickleWriter& p) {
           p.Global("torch._utils", "_rebuild_tensor_v2").Mark();
           p.Mark().Str("storage").Global("torch", "FloatStorage").Str("140").Str("cpu").Int(3);
           p.Str("141").Int(1).Int(2).Tuple3().Tuple().BinPersId();
           p.Int(0).IntTuple({2}).IntTuple({1}).Bool(false).EmptyOrderedDict().Tuple().Reduce();
         });
       },
       Code::kUnsupported, "object pickle", "storage '140' is a view of another storage (view metadata, torch < 0.4)",
       nullptr},
      {"view leaves its storage", [](LegacyFile& f) {
         f.object = PickleOf([](PickleWriter& p) {
           p.EmptyDict().Str("a").TensorV2("FloatStorage", "140", 3, 2, {2}, {1}, false, true).SetItem();
           p.Str("c").TensorV2("LongStorage", "9", 4, 0, {4}, {1}, false, true).SetItem();
         });
       },
       Code::kCorrupt, "a", "view bytes [8, 16) leave storage '140' of 12 bytes", nullptr},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    LegacyFile f = GoodLegacy();
    c.mutate(f);
    io::MemSource src("old.pt", Bytes(f.bytes()));
    Status s = ReadCheckpoint(src).status();
    CHECK_EQ(s.code(), c.code);
    CHECK_EQ(s.record(), c.record);
    if (c.message) CHECK_EQ(s.message(), c.message);
    if (c.offset) CHECK_EQ(s.offset(), c.offset(f));
  }
}

TEST_CASE("legacy: module pids are not storages; int keys are decimal strings") {
  LegacyFile f = GoodLegacy();
  f.object = PickleOf([](PickleWriter& p) {
    p.EmptyList().Mark();
    p.Mark().Str("module").Global("torch.nn.modules.linear", "Linear").Str("linear.py").Str("class Linear").Tuple();
    p.BinPersId();
    p.TensorV2("FloatStorage", "140", 3, 0, {3}, {1}, false, true);
    p.TensorV2("LongStorage", "9", 4, 0, {4}, {1}, false, true);
    p.Appends();
  });
  io::MemSource src("old.pt", Bytes(f.bytes()));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  REQUIRE_EQ(c->tensors.size(), 2u);
  CHECK_EQ(c->tensors[0].name, "1");
  CHECK_EQ(c->tensors[1].name, "2");
  CHECK_EQ(c->storages.size(), 2u);
}

TEST_CASE("every strict prefix of a legacy checkpoint fails with kCorrupt") {
  std::vector<std::byte> bytes = FixtureBytes("fixtures/torch/legacy_state_dict.pt");
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    io::MemSource src("p", std::span<const std::byte>(bytes.data(), n));
    CHECK_EQ(ReadCheckpoint(src).status().code(), Code::kCorrupt);
  }
  io::MemSource whole("p", bytes);
  CHECK(ReadCheckpoint(whole).ok());
}

TEST_CASE("legacy pickles larger than the first read, and larger than max_pickle_bytes") {
  // An object pickle of ~300 KiB: the reader grows its buffer past 64 KiB.
  LegacyFile f = GoodLegacy();
  f.object = PickleOf([](PickleWriter& p) {
    p.EmptyDict().Str("pad").Str(std::string(300000, 'z')).SetItem();
    p.Str("a").TensorV2("FloatStorage", "140", 3, 0, {3}, {1}, false, true).SetItem();
    p.Str("c").TensorV2("LongStorage", "9", 4, 0, {4}, {1}, false, true).SetItem();
  });
  io::MemSource src("big.pt", Bytes(f.bytes()));
  Result<Checkpoint> c = ReadCheckpoint(src);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  CHECK_EQ(c->tensors.size(), 2u);
  CHECK_EQ(c->pickle_size, f.object.size());
  ReadOptions small;
  small.max_pickle_bytes = 100000;
  Status s = ReadCheckpoint(src, small).status();
  CHECK_EQ(s.code(), Code::kLimit);
  CHECK_EQ(s.record(), "object pickle");
  CHECK_EQ(s.message(), "pickle is larger than 100000 bytes (--max-pickle-bytes)");
  CHECK_EQ(s.offset(), f.head.size());
}

TEST_CASE("max_pickle_bytes caps data.pkl") {
  io::MemSource src("x", FixtureBytes("fixtures/torch/state_dict.pt"));
  ReadOptions small;
  small.max_pickle_bytes = 100;
  Status s = ReadCheckpoint(src, small).status();
  CHECK_EQ(s.code(), Code::kLimit);
  CHECK_EQ(s.record(), "state_dict/data.pkl");
}

}  // namespace
}  // namespace zerofold::torch
