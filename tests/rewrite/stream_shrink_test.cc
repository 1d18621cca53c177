// ShrinkStream against ShrinkFile: the same bytes for every fixture, through
// pipes of any chunking and through zstd, and the refusals a single pass
// must make.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/mem.h"
#include "io/zstd_stream.h"
#include "rewrite/cast.h"
#include "rewrite/shrink.h"
#include "torch/archive_writer.h"
#include "torch/pickle_writer.h"
#include "torch/stream_fixtures.h"
#include "zip/writer.h"

namespace zerofold::rewrite {
namespace {

using torch::testing::ArchiveOf;
using torch::testing::ReadFileBytes;
using torch::testing::SourceRoot;

void WriteFileBytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A fresh folder under the system's temp folder, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "zf-stream-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every torch file among the fixtures, and the bad ones, which both forms
// must refuse alike.
std::vector<std::string> Fixtures() { return torch::testing::FixtureFiles({"torch", "hf", "deepspeed", "bad"}); }

std::vector<std::byte> Zstd(std::span<const std::byte> bytes) {
  io::MemSink mem;
  std::unique_ptr<io::ZstdSink> z = io::ZstdSink::Open(&mem).value();
  REQUIRE(z->Append(bytes).ok());
  REQUIRE(z->Finish().ok());
  return mem.bytes();
}

std::vector<std::byte> Unzstd(std::vector<std::byte> bytes) {
  std::unique_ptr<io::ZstdSource> z =
      io::ZstdSource::Open(std::make_unique<io::MemStreamSource>("z", std::move(bytes))).value();
  std::vector<std::byte> out, buf(1 << 16);
  while (true) {
    size_t n = z->Read(buf).value();
    if (n == 0) break;
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return out;
}

struct Streamed {
  Result<ShrinkReport> report;
  std::vector<std::byte> bytes;
};

// ShrinkStreamTo over `input` fed `chunk` bytes at a time, into memory.
Streamed StreamShrink(std::unique_ptr<StreamSource> input, const std::string& output,
                      const ShrinkOptions& options = {}) {
  io::MemSink sink(output);
  Result<ShrinkReport> r = ShrinkStreamTo(input.get(), &sink, output, options);
  return {std::move(r), sink.bytes()};
}

void CheckSameReport(const ShrinkReport& got, const ShrinkReport& want) {
  CHECK_EQ(got.input_file_bytes, want.input_file_bytes);
  CHECK_EQ(got.output_file_bytes, want.output_file_bytes);
  CHECK_EQ(got.stored_before, want.stored_before);
  CHECK_EQ(got.stored_after, want.stored_after);
  CHECK_EQ(got.tensors, want.tensors);
  CHECK_EQ(got.storages_before, want.storages_before);
  CHECK_EQ(got.storages_after, want.storages_after);
  CHECK(got.changed_storages == want.changed_storages);
  CHECK(got.kept_whole == want.kept_whole);
  CHECK_EQ(got.copied_unchanged, want.copied_unchanged);
  CHECK(got.tensor_nbytes == want.tensor_nbytes);
}

TEST_CASE("stream shrink writes the file form's bytes for every fixture") {
  TempDir tmp;
  Env* env = Env::Default();
  size_t compared = 0, refused = 0, accepted = 0;
  for (const std::string& path : Fixtures()) {
    CAPTURE(path);
    // One output name for both forms: legacy input takes its stem as top folder.
    const std::string out = tmp.path() + "/out.pt";
    std::filesystem::remove(out);
    Result<ShrinkReport> file = ShrinkFile(env, path, out, {});
    const std::vector<std::byte> input = ReadFileBytes(path);
    if (file.ok()) ++accepted;
    for (size_t chunk : {size_t{1} << 20, size_t{7}}) {
      CAPTURE(chunk);
      ShrinkOptions options;
      options.buffer_bytes = chunk == 7 ? 4096 : size_t{4} << 20;
      Streamed s = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", input, chunk), out, options);
      if (!file.ok()) {
        // The bad fixtures: refused alike (TorchScript may be found by its
        // layout first: unsupported either way).
        REQUIRE_FALSE(s.report.ok());
        CHECK_EQ(s.report.status().code(), file.status().code());
        CHECK_EQ(s.report.status().path(), "<stdin>");
        ++refused;
        continue;
      }
      REQUIRE_MESSAGE(s.report.ok(), s.report.status().ToString());
      if (file->copied_unchanged && path.find("deflated") != std::string::npos) {
        // The file form measures a deflated archive and copies it unchanged
        // when the stored rewrite is not smaller; one pass cannot know its
        // size before its storages pass and rewrites it stored (README).
        CHECK_FALSE(s.report->copied_unchanged);
        CHECK_GT(s.bytes.size(), input.size());
        ++compared;
        continue;
      }
      CHECK(s.bytes == ReadFileBytes(out));
      CheckSameReport(*s.report, *file);
      ++compared;
    }
    if (!file.ok() || path.find("deflated") != std::string::npos) continue;
    // Through zstd on both sides.
    auto zin = io::ZstdSource::Open(std::make_unique<io::MemStreamSource>("in.pt.zst", Zstd(input), 4096)).value();
    io::MemSink mem;
    auto zout = io::ZstdSink::Open(&mem).value();
    Result<ShrinkReport> z = ShrinkStreamTo(zin.get(), zout.get(), out, {});
    REQUIRE_MESSAGE(z.ok(), z.status().ToString());
    REQUIRE(zout->Finish().ok());
    CHECK(Unzstd(mem.bytes()) == ReadFileBytes(out));
  }
  CHECK_GE(accepted, 58u);
  CHECK_EQ(compared, 2 * accepted);  // every good fixture, two chunkings
  CHECK_EQ(refused, 2 * 4u);    // fixtures/bad: torchscript, three unsafe
}

TEST_CASE("--dtype and --select give the file form's bytes through a pipe too") {
  TempDir tmp;
  Env* env = Env::Default();
  size_t compared = 0;
  for (const std::string& path : Fixtures()) {
    for (const char* dtype : {"bfloat16", "float32"}) {
      CAPTURE(path);
      CAPTURE(dtype);
      ShrinkOptions options;
      options.dtype = ParseCastTarget(dtype);
      const std::string out = tmp.path() + "/out.pt";
      std::filesystem::remove(out);
      Result<ShrinkReport> file = ShrinkFile(env, path, out, options);
      Streamed s = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", ReadFileBytes(path), 1000), out,
                                options);
      if (!file.ok()) {
        REQUIRE_FALSE(s.report.ok());
        CHECK_EQ(s.report.status().code(), file.status().code());
        // fixtures/bad are refused by their layout first through a pipe;
        // a refused cast reads the same.
        if (path.find("/fixtures/bad/") == std::string::npos)
          CHECK_EQ(s.report.status().message(), file.status().message());
        continue;
      }
      REQUIRE_MESSAGE(s.report.ok(), s.report.status().ToString());
      CHECK(s.bytes == ReadFileBytes(out));
      CheckSameReport(*s.report, *file);
      ++compared;
    }
  }
  CHECK_GE(compared, 100u);

  // ZeRO-1/2 model states: `module` holds the 16-bit weights as views of flat buffers.
  const std::string states = SourceRoot() + "/fixtures/deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt";
  for (const char* select : {"module", "module/transformer.wte.weight", "no/such/key"}) {
    CAPTURE(select);
    ShrinkOptions options;
    options.select = select;
    const std::string out = tmp.path() + "/sel.pt";
    std::filesystem::remove(out);
    Result<ShrinkReport> file = ShrinkFile(env, states, out, options);
    Streamed s = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", ReadFileBytes(states), 100), out,
                              options);
    if (!file.ok()) {
      REQUIRE_FALSE(s.report.ok());
      CHECK_EQ(s.report.status().code(), Code::kInvalidArgument);
      CHECK_EQ(s.report.status().message(), file.status().message());
      continue;
    }
    REQUIRE_MESSAGE(s.report.ok(), s.report.status().ToString());
    CHECK_GT(s.report->tensors, 0u);
    CHECK(s.bytes == ReadFileBytes(out));
    CheckSameReport(*s.report, *file);
  }
}

TEST_CASE("the file form writes .zst and standard-output names through the same sinks") {
  TempDir tmp;
  Env* env = Env::Default();
  const std::string in = SourceRoot() + "/fixtures/hf/bloated/pytorch_model-00001-of-00003.bin";
  Result<ShrinkReport> plain = ShrinkFile(env, in, tmp.path() + "/m.bin", {});
  REQUIRE(plain.ok());
  Result<ShrinkReport> zst = ShrinkFile(env, in, tmp.path() + "/m.bin.zst", {});
  REQUIRE(zst.ok());
  std::vector<std::byte> z = ReadFileBytes(tmp.path() + "/m.bin.zst");
  CHECK_EQ(zst->output_file_bytes, z.size());
  CHECK(Unzstd(z) == ReadFileBytes(tmp.path() + "/m.bin"));
  // --verify needs files to read again.
  ShrinkOptions verify;
  verify.verify = true;
  Result<ShrinkReport> z_verify = ShrinkFile(env, in, tmp.path() + "/v.bin.zst", verify);
  CHECK_EQ(z_verify.status().code(), Code::kInvalidArgument);
  CHECK_EQ(z_verify.status().message(), "--verify reads the output back; a stream ('-', .zst) cannot be");
  CHECK_EQ(z_verify.status().path(), tmp.path() + "/v.bin.zst");
  CHECK_FALSE(std::filesystem::exists(tmp.path() + "/v.bin.zst"));
  io::MemStreamSource pipe("<stdin>", ReadFileBytes(in));
  io::MemSink sink;
  Result<ShrinkReport> s_verify = ShrinkStreamTo(&pipe, &sink, "-", verify);
  CHECK_EQ(s_verify.status().code(), Code::kInvalidArgument);
  CHECK_EQ(s_verify.status().message(), "--verify reads the input again; '<stdin>' is a stream");
  CHECK(sink.bytes().empty());
  CHECK_EQ(StemOf("-"), "archive");
  CHECK_EQ(StemOf("a/b.pt.zst"), "b");
}

TEST_CASE("legacy input from a pipe: output top folder from the output name, archive for standard output") {
  const std::vector<std::byte> input = ReadFileBytes(SourceRoot() + "/fixtures/torch/legacy_state_dict.pt");
  // A cast, which rewrites it: a plain shrink passes this file through, as
  // its zip form would not be smaller.
  ShrinkOptions cast;
  cast.dtype = torch::DType::kFloat32;
  Streamed named = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", input, 100), "dir/small.pt", cast);
  Streamed piped = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", input, 100), "-", cast);
  Streamed plain = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", input, 100), "-");
  REQUIRE(plain.report.ok());
  CHECK(plain.report->copied_unchanged);
  CHECK(plain.bytes == input);
  REQUIRE(named.report.ok());
  REQUIRE(piped.report.ok());
  auto starts_with_name = [](const std::vector<std::byte>& zip, std::string_view name) {
    // The first local header's name: 30 bytes of fixed fields, then the name.
    std::string_view got(reinterpret_cast<const char*>(zip.data()) + 30, name.size());
    return got == name;
  };
  CHECK(starts_with_name(named.bytes, "small/data.pkl"));
  CHECK(starts_with_name(piped.bytes, "archive/data.pkl"));
}

std::vector<std::byte> Counting(size_t n, int start) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>(start + static_cast<int>(i)));
  return b;
}

// Shrinks `archive` both ways; returns the stream form's result after
// checking it equals the file form's when that succeeds.
Streamed BothWays(const std::vector<std::byte>& archive, Result<ShrinkReport>* file_result = nullptr) {
  TempDir tmp;
  WriteFileBytes(tmp.path() + "/in.pt", archive);
  Result<ShrinkReport> file = ShrinkFile(Env::Default(), tmp.path() + "/in.pt", tmp.path() + "/out.pt", {});
  Streamed s = StreamShrink(std::make_unique<io::MemStreamSource>("<stdin>", archive, 3), "out.pt");
  if (file.ok() && s.report.ok()) CHECK(s.bytes == ReadFileBytes(tmp.path() + "/out.pt"));
  if (file_result) *file_result = file;
  return s;
}

TEST_CASE("storages out of their output keys' order are refused, naming the record") {
  // Two split storages: "0" (views at 0 and 512 of 1024 floats) and "1"
  // (at 256 of 512), with more unreferenced bytes than their records cost.
  torch::testing::PickleWriter p;
  p.Proto(2).EmptyDict().Mark();
  p.Str("a").TensorV2("FloatStorage", "0", 1024, 0, {2}, {1});
  p.Str("b").TensorV2("FloatStorage", "0", 1024, 512, {2}, {1});
  p.Str("c").TensorV2("FloatStorage", "1", 512, 256, {2}, {1});
  p.SetItems().Stop();
  const std::vector<std::byte> pkl = p.bytes(), version{std::byte{'3'}, std::byte{'\n'}};
  const std::vector<std::byte> d0 = Counting(4096, 0), d1 = Counting(2048, 100);

  Result<ShrinkReport> file = Status::Internal("not run");
  Streamed in_order = BothWays(ArchiveOf({{"data.pkl", pkl}, {"data/0", d0}, {"data/1", d1}, {"version", version}}), &file);
  REQUIRE(file.ok());
  REQUIRE_MESSAGE(in_order.report.ok(), in_order.report.status().ToString());
  CHECK_EQ(in_order.report->storages_after, 3u);
  CHECK_EQ(in_order.report->stored_after, 8u + 8u + 8u);

  Streamed reversed = BothWays(ArchiveOf({{"data.pkl", pkl}, {"data/1", d1}, {"data/0", d0}, {"version", version}}), &file);
  REQUIRE(file.ok());  // a file can be read in any order
  REQUIRE_FALSE(reversed.report.ok());
  const Status& s = reversed.report.status();
  CHECK_EQ(s.code(), Code::kUnsupported);
  CHECK_EQ(s.record(), "top/data/1");
  CHECK_EQ(s.path(), "<stdin>");
  CHECK_EQ(s.message(),
           "record top/data/1 comes before top/data/0, but its bytes go after them in the output, whose storages "
           "are in string order of their keys; a single pass cannot reorder them: give the file's path instead");

  // A storage no tensor needs may come anywhere.
  torch::testing::PickleWriter q;
  q.Proto(2).EmptyDict().Mark();
  q.Str("a").TensorV2("FloatStorage", "0", 1024, 0, {2}, {1});
  q.SetItems().Stop();
  Streamed unneeded = BothWays(ArchiveOf({{"data.pkl", q.bytes()}, {"data/9", d1}, {"data/0", d0}, {"version", version}}), &file);
  REQUIRE(file.ok());
  REQUIRE_MESSAGE(unneeded.report.ok(), unneeded.report.status().ToString());
}

TEST_CASE("an output storage that starts inside the previous one's bytes is served from the kept tail") {
  // One untyped storage of 4096 bytes: float16 [0, 6), float16 [6, 10) and
  // float32 [8, 12). The second cluster [6, 12) starts on a multiple of 4,
  // so at byte 4: two bytes before the first cluster's end.
  torch::testing::PickleWriter p;
  p.Proto(2).EmptyDict().Mark();
  p.Str("a").TensorV3("0", 4096, 0, {3}, {1}, "float16");
  p.Str("b").TensorV3("0", 4096, 3, {2}, {1}, "float16");
  p.Str("c").TensorV3("0", 4096, 2, {1}, {1}, "float32");
  p.SetItems().Stop();
  const std::vector<std::byte> version{std::byte{'3'}, std::byte{'\n'}};
  Result<ShrinkReport> file = Status::Internal("not run");
  Streamed s = BothWays(ArchiveOf({{"data.pkl", p.bytes()}, {"data/0", Counting(4096, 1)}, {"version", version}}), &file);
  REQUIRE_MESSAGE(file.ok(), file.status().ToString());
  REQUIRE_MESSAGE(s.report.ok(), s.report.status().ToString());
  REQUIRE_EQ(s.report->changed_storages.size(), 1u);
  CHECK_EQ(s.report->changed_storages[0], "0: 4096 bytes -> 6 + 8");
}

TEST_CASE("a truncated stream fails with the input's path and an offset inside it, and a dry run reads it all") {
  const std::vector<std::byte> input = ReadFileBytes(SourceRoot() + "/fixtures/torch/views.pt");
  for (size_t cut : {size_t{0}, size_t{100}, input.size() / 2, input.size() - 1}) {
    CAPTURE(cut);
    Streamed s = StreamShrink(std::make_unique<io::MemStreamSource>(
                                  "<stdin>", std::vector<std::byte>(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(cut)), 64),
                              "-");
    REQUIRE_FALSE(s.report.ok());
    CHECK_EQ(s.report.status().code(), Code::kCorrupt);
    CHECK_EQ(s.report.status().path(), "<stdin>");
    CHECK_LE(s.report.status().offset(), cut);
  }
  // Through zstd: the message says the offset is in the decompressed stream.
  std::vector<std::byte> half(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(input.size() / 2));
  auto zin = io::ZstdSource::Open(std::make_unique<io::MemStreamSource>("v.pt.zst", Zstd(half))).value();
  io::MemSink sink;
  Result<ShrinkReport> z = ShrinkStreamTo(zin.get(), &sink, "-", {});
  REQUIRE_FALSE(z.ok());
  CHECK_EQ(z.status().code(), Code::kCorrupt);
  CHECK_EQ(z.status().path(), "v.pt.zst");
  CHECK_NE(z.status().message().find("; in .zst input, offset " + std::to_string(z.status().offset()) +
                                     " of the decompressed stream"),
           std::string::npos);

  // A dry run writes nothing and reports the size the file form reports.
  TempDir tmp;
  ShrinkOptions dry_run;
  dry_run.dry_run = true;
  Result<ShrinkReport> file =
      ShrinkFile(Env::Default(), SourceRoot() + "/fixtures/torch/views.pt", tmp.path() + "/out.pt", dry_run);
  REQUIRE(file.ok());
  io::MemStreamSource src("<stdin>", input, 64);
  Result<ShrinkReport> dry = ShrinkStreamTo(&src, nullptr, tmp.path() + "/out.pt", dry_run);
  REQUIRE(dry.ok());
  CheckSameReport(*dry, *file);
  CHECK_FALSE(std::filesystem::exists(tmp.path() + "/out.pt"));
}

}  // namespace
}  // namespace zerofold::rewrite

namespace zerofold::rewrite {
namespace {

// A sink that checks each byte appended against a source, at the same offset.
class CompareSink final : public Sink {
 public:
  explicit CompareSink(const RandomSource* want) : want_(want), buf_(1 << 20) {}
  Status Append(std::span<const std::byte> data) override {
    while (!data.empty()) {
      size_t n = std::min(data.size(), buf_.size());
      ZF_TRY(ReadExactAt(*want_, pos_, std::span<std::byte>(buf_.data(), n)));
      if (std::memcmp(buf_.data(), data.data(), n) != 0)
        return Status::Corrupt("differs").WithOffset(pos_);
      pos_ += n;
      data = data.subspan(n);
    }
    return Status::OK();
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return want_->name(); }

 private:
  const RandomSource* want_;
  std::vector<std::byte> buf_;
  uint64_t pos_ = 0;
};

TEST_CASE("the 4.25 GiB zip64 archive streams through shrink unchanged") {
  // Every byte of its storages is referenced, so the output is the input.
  zip::testing::TorchZip64Source archive;
  REQUIRE(archive.loaded());
  zip::testing::RandomStream src(&archive, 1 << 20);
  CompareSink sink(&archive);
  Result<ShrinkReport> r = ShrinkStreamTo(&src, &sink, "-", {});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK_EQ(sink.position(), archive.size());
  CHECK_EQ(r->output_file_bytes, archive.size());
  CHECK_EQ(r->input_file_bytes, archive.size());
  CHECK_EQ(r->storages_after, 3u);
  CHECK_EQ(r->stored_after, (uint64_t{1} << 32) + (uint64_t{1} << 28) + 10);
}

}  // namespace
}  // namespace zerofold::rewrite

namespace zerofold::rewrite {
namespace {

std::vector<std::byte> Concat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<std::byte> Count64(uint64_t v) {
  std::vector<std::byte> b(8);
  for (int i = 0; i < 8; ++i) b[i] = std::byte((v >> (8 * i)) & 0xff);
  return b;
}

// A legacy file (torch/legacy.h) of `object` whose storages are keys "10"
// (4 floats) and "20" (2 floats), listed in that order, with the given counts.
std::vector<std::byte> LegacyFile(const std::vector<std::byte>& object, uint64_t count10 = 4,
                                  uint64_t count20 = 2) {
  using torch::testing::PickleWriter;
  PickleWriter magic, protocol, sys_info, keys;
  magic.Proto(2).Long1("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19").Stop();
  protocol.Proto(2).Int(1001).Stop();
  sys_info.Proto(2).EmptyDict().Stop();
  keys.Proto(2).EmptyList().Mark().Str("10").Str("20").Appends().Stop();
  return Concat({magic.bytes(), protocol.bytes(), sys_info.bytes(), object, keys.bytes(), Count64(count10),
                 Counting(16, 1), Count64(count20), Counting(8, 50)});
}

TEST_CASE("hand-made legacy and bare-storage inputs: the stream form does what the file form does") {
  using torch::testing::PickleWriter;
  // A view of half of "10" and all of "20".
  PickleWriter tensors;
  tensors.Proto(2).EmptyDict().Mark();
  tensors.Str("a").TensorV2("FloatStorage", "10", 4, 2, {2}, {1}, false, /*legacy=*/true);
  tensors.Str("b").TensorV2("FloatStorage", "20", 2, 0, {2}, {1}, false, /*legacy=*/true);
  tensors.SetItems().Stop();
  Result<ShrinkReport> file = Status::Internal("not run");
  Streamed ok = BothWays(LegacyFile(tensors.bytes()), &file);
  REQUIRE_MESSAGE(file.ok(), file.status().ToString());
  REQUIRE_MESSAGE(ok.report.ok(), ok.report.status().ToString());
  // 8 bytes to reclaim are less than the zip container costs over the
  // legacy one: the input passes through unchanged, both ways.
  CHECK(ok.report->copied_unchanged);
  CHECK(ok.bytes == LegacyFile(tensors.bytes()));
  CHECK_EQ(ok.report->stored_after, 16u + 8u);

  // A count that disagrees with the storage: the same error both ways.
  Streamed bad_count = BothWays(LegacyFile(tensors.bytes(), 4, 3), &file);
  REQUIRE_FALSE(file.ok());
  REQUIRE_FALSE(bad_count.report.ok());
  CHECK_EQ(bad_count.report.status().code(), Code::kCorrupt);
  CHECK_EQ(bad_count.report.status().record(), "storage 20");
  CHECK_EQ(bad_count.report.status().message(), file.status().message());
  CHECK_EQ(bad_count.report.status().offset(), file.status().offset());

  // A legacy storage no tensor holds is refused both ways.
  PickleWriter bare;
  bare.Proto(2).EmptyDict().Mark();
  bare.Str("a").TensorV2("FloatStorage", "10", 4, 0, {4}, {1}, false, /*legacy=*/true);
  bare.Str("s").StoragePid("FloatStorage", "20", 2, /*legacy=*/true);
  bare.SetItems().Stop();
  Streamed refused = BothWays(LegacyFile(bare.bytes()), &file);
  REQUIRE_FALSE(file.ok());
  REQUIRE_FALSE(refused.report.ok());
  CHECK_EQ(refused.report.status().code(), Code::kUnsupported);
  CHECK_EQ(refused.report.status().message(), file.status().message());
  CHECK_EQ(refused.report.status().record(), "storage 20");

  // In a zip archive a bare storage is kept whole, in key order.
  PickleWriter zbare;
  zbare.Proto(2).EmptyDict().Mark();
  zbare.Str("a").TensorV2("FloatStorage", "0", 4, 1, {1}, {1});
  zbare.Str("s").StoragePid("FloatStorage", "1", 2);
  zbare.SetItems().Stop();
  const std::vector<std::byte> version{std::byte{'3'}, std::byte{'\n'}};
  Streamed whole = BothWays(
      ArchiveOf({{"data.pkl", zbare.bytes()}, {"data/0", Counting(16, 1)}, {"data/1", Counting(8, 9)}, {"version", version}}),
      &file);
  REQUIRE_MESSAGE(file.ok(), file.status().ToString());
  REQUIRE_MESSAGE(whole.report.ok(), whole.report.status().ToString());
  // 12 bytes of "0" are unreferenced: less than nothing to gain once
  // padded, so the file is copied as it is.
  CHECK(whole.report->copied_unchanged);
  CHECK_EQ(whole.report->stored_after, 16u + 8u);
}

}  // namespace
}  // namespace zerofold::rewrite
