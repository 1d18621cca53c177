// Sizes of shrink's output: what --dry-run predicts is what is written, an
// unbloated file keeps its bytes, and records past 4 GiB are written.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/mem.h"
#include "io/mem_env.h"
#include "rewrite/shrink.h"
#include "support/fixtures.h"
#include "torch/archive_writer.h"
#include "zip/archive.h"

namespace zerofold::rewrite {
namespace {

using testing::Fixture;

using Bytes = std::vector<std::byte>;


// Trimmed and untrimmed files, zip and legacy, with and without zero-byte
// storages.
const char* const kFiles[] = {
    "torch/views.pt",
    "torch/scalars_empty.pt",
    "torch/state_dict.pt",
    "torch/legacy_views_tied.pt",
    "torch/legacy_dtypes.pt",
    "torch/zip_rewritten.pt",
    "hf/bloated/pytorch_model-00001-of-00003.bin",
    "deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin",
    "deepspeed/zero3_ws3_fp16/ckpt/global_step2/zero_pp_rank_0_mp_rank_00_model_states.pt",
};

TEST_CASE("the dry run predicts the exact output size") {
  for (const char* name : kFiles) {
    CAPTURE(std::string(name));
    io::MemEnv mem;
    mem.SetFile("in.pt", Fixture(name));
    ShrinkOptions dry;
    dry.dry_run = true;
    Result<ShrinkReport> planned = ShrinkFile(&mem, "in.pt", "out.pt", dry);
    REQUIRE(planned.ok());
    CHECK_FALSE(mem.FileExists("out.pt"));
    Result<ShrinkReport> written = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{});
    REQUIRE(written.ok());
    CHECK_EQ(planned->output_file_bytes, mem.GetFile("out.pt")->size());
    CHECK_EQ(written->output_file_bytes, mem.GetFile("out.pt")->size());
    CHECK_EQ(planned->changed_storages, written->changed_storages);
  }
}

TEST_CASE("zero-byte storages are exactly sized already: kept, and not reported as changed") {
  io::MemEnv mem;
  // ZeRO-3 model states: 28 empty placeholders, each on a zero-byte storage.
  const Bytes in = Fixture("deepspeed/zero3_ws3_fp16/ckpt/global_step2/zero_pp_rank_0_mp_rank_00_model_states.pt");
  mem.SetFile("in.pt", in);
  Result<ShrinkReport> r = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{});
  REQUIRE(r.ok());
  CHECK(r->changed_storages.empty());
  CHECK(mem.GetFile("out.pt").value() == in);  // torch 1.13 wrote it: the same bytes

  // Storage 7 has 32 bytes no view reads; trimming them frees no byte of the
  // file (its records stay within the same 64-byte blocks), so a plain
  // shrink keeps it and copies the file; a conversion trims it.
  mem.SetFile("in.pt", Fixture("torch/scalars_empty.pt"));
  r = ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{});
  REQUIRE(r.ok());
  CHECK(r->changed_storages.empty());
  CHECK(r->copied_unchanged);
  CHECK(mem.GetFile("out.pt").value() == Fixture("torch/scalars_empty.pt"));
  ShrinkOptions dry;
  dry.dry_run = true;
  dry.dtype = torch::DType::kFloat32;
  r = ShrinkFile(&mem, "in.pt", "out.pt", dry);
  REQUIRE(r.ok());
  CHECK_EQ(r->changed_storages, std::vector<std::string>{"7: 40 bytes -> 8"});
}

TEST_CASE("an empty storage record is laid out as torch lays it out: no data descriptor") {
  io::MemEnv mem;
  mem.SetFile("in.pt", Fixture("torch/scalars_empty.pt"));
  REQUIRE(ShrinkFile(&mem, "in.pt", "out.pt", ShrinkOptions{}).ok());
  const Bytes out = mem.GetFile("out.pt").value();
  zip::Archive archive = zip::ReadArchiveBytes(out).value();
  size_t empty = 0;
  for (const zip::Entry& listed : archive.entries) {
    if (listed.size != 0) continue;
    CAPTURE(listed.name);
    const zip::Entry e = zip::LocateEntry(io::MemSource("out.pt", out), listed).value();
    // APPNOTE 4.3.7: the general purpose flags follow the signature and
    // version; torch sets only bit 11 (UTF-8 names), no bit 3 (descriptor).
    const uint64_t flags = e.header_offset + 4 + 2;
    CHECK_EQ(static_cast<int>(out[flags]) | static_cast<int>(out[flags + 1]) << 8, 0x0800);
    // The next local header follows at once.
    CHECK_EQ(static_cast<char>(out[e.data_offset]), 'P');
    CHECK_EQ(static_cast<int>(out[e.data_offset + 2]), 3);
    empty++;
  }
  CHECK_EQ(empty, 3u);
}

// Counts bytes; keeps none.
class CountingSink final : public Sink {
 public:
  Status Append(std::span<const std::byte> data) override {
    n_ += data.size();
    return Status::OK();
  }
  uint64_t position() const override { return n_; }
  const std::string& name() const override { return name_; }

 private:
  uint64_t n_ = 0;
  std::string name_ = "<count>";
};

TEST_CASE("a storage record past 4 GiB is written (zip64), at the size TorchArchiveSize gives") {
  const uint64_t big = (uint64_t{1} << 32) + 123;
  std::vector<torch::StorageRecord> storages = {{"0", 8}, {"1", big}, {"2", 0}};
  const std::byte pkl[] = {std::byte{0x80}, std::byte{2}, std::byte{'N'}, std::byte{'.'}};
  torch::ArchiveContents contents;
  contents.top_folder = "archive";
  contents.data_pkl = pkl;
  contents.storages = storages;
  std::vector<std::byte> chunk(size_t{1} << 22);
  auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
    for (uint64_t left = storages[index].nbytes; left > 0;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      ZF_TRY(emit(std::span<const std::byte>(chunk.data(), n)));
      left -= n;
    }
    return Status::OK();
  };
  CountingSink sink;
  Status s = torch::WriteTorchArchive(contents, fill, &sink);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  CHECK_EQ(sink.position(), torch::TorchArchiveSize(contents));
  CHECK_GT(sink.position(), big);
}

}  // namespace
}  // namespace zerofold::rewrite
