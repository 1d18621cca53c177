#include "torch/stream_checkpoint.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/mem.h"
#include "torch/archive_writer.h"
#include "torch/pickle_writer.h"
#include "torch/read.h"
#include "torch/stream_fixtures.h"
#include "zip/writer.h"

namespace zerofold::torch {
namespace {

using testing::ArchiveOf;
using testing::ReadFileBytes;
using testing::Records;
using testing::SourceRoot;
using testing::TextBytes;

std::vector<std::string> Fixtures() { return testing::FixtureFiles({"torch", "hf", "deepspeed"}); }

// Reads `bytes` through a StreamCheckpointReader fed `chunk` bytes at a
// time, and every storage's bytes in pieces of `piece`. Returns the first
// error; on success, the storages' bytes in the order they came.
struct Streamed {
  Checkpoint ckpt;
  std::vector<OtherRecord> others;
  std::vector<std::pair<uint32_t, std::vector<std::byte>>> storages;
  uint64_t position = 0;
};
Result<Streamed> StreamAll(std::vector<std::byte> bytes, size_t chunk, size_t piece = 1000) {
  io::MemStreamSource src("in", std::move(bytes), chunk);
  StreamCheckpointReader r(&src);
  ZF_TRY(r.ReadModel());
  Streamed out;
  std::vector<std::byte> buf(piece);
  while (true) {
    ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> s, r.NextStorage());
    if (!s) break;
    std::vector<std::byte> data;
    while (true) {
      ZF_ASSIGN_OR_RETURN(size_t n, r.Read(buf));
      if (n == 0) break;
      data.insert(data.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    }
    out.storages.emplace_back(*s, std::move(data));
  }
  ZF_TRY(r.Finish());
  out.ckpt = std::move(r.checkpoint());
  out.others = r.other_records();
  out.position = r.position();
  return out;
}

TEST_CASE("streaming every fixture gives ReadCheckpoint's model and the storages' bytes") {
  for (const std::string& path : Fixtures()) {
    CAPTURE(path);
    std::vector<std::byte> bytes = ReadFileBytes(path);
    io::MemSource file(path, bytes);
    Result<Checkpoint> want = ReadCheckpoint(file);
    REQUIRE_MESSAGE(want.ok(), want.status().ToString());
    for (size_t chunk : {size_t{7}, size_t{1} << 20}) {
      CAPTURE(chunk);
      Result<Streamed> got = StreamAll(bytes, chunk);
      REQUIRE_MESSAGE(got.ok(), got.status().ToString());
      const Checkpoint& c = got->ckpt;
      CHECK_EQ(c.format, want->format);
      CHECK_EQ(c.top_folder, want->top_folder);
      CHECK_EQ(c.pickle_offset, want->pickle_offset);
      CHECK_EQ(c.pickle_size, want->pickle_size);
      CHECK(c.unsafe_globals == want->unsafe_globals);
      CHECK_EQ(c.big_endian, want->big_endian);
      CHECK_EQ(got->position, bytes.size());
      REQUIRE_EQ(c.tensors.size(), want->tensors.size());
      for (size_t i = 0; i < c.tensors.size(); ++i) {
        CHECK_EQ(c.tensors[i].name, want->tensors[i].name);
        CHECK_EQ(c.tensors[i].storage, want->tensors[i].storage);
        CHECK_EQ(c.tensors[i].storage_offset, want->tensors[i].storage_offset);
      }
      REQUIRE_EQ(c.storages.size(), want->storages.size());
      // Each storage arrives once, at the file's offset, with the file's bytes.
      CHECK_EQ(got->storages.size(), c.storages.size());
      std::vector<bool> seen(c.storages.size(), false);
      for (const auto& [index, data] : got->storages) {
        const Storage& s = c.storages[index];
        const Storage& w = want->storages[index];
        CAPTURE(s.key);
        CHECK_FALSE(seen[index]);
        seen[index] = true;
        CHECK_EQ(s.key, w.key);
        CHECK_EQ(s.record, w.record);
        CHECK_EQ(s.nbytes, w.nbytes);
        CHECK_EQ(s.data_offset, w.data_offset);
        CHECK_EQ(s.record_size, w.record_size);
        REQUIRE_EQ(data.size(), s.nbytes);
        CHECK(std::equal(data.begin(), data.end(), bytes.begin() + static_cast<std::ptrdiff_t>(w.data_offset)));
      }
      // The other records, in the file's order, with their bytes.
      REQUIRE_EQ(got->others.size(), want->other_records.size());
      for (size_t i = 0; i < got->others.size(); ++i) {
        const zip::Entry& w = want->other_records[i];
        const OtherRecord& o = got->others[i];
        CHECK_EQ(o.entry.name, w.name);
        CHECK_EQ(o.entry.data_offset, w.data_offset);
        CHECK_EQ(o.entry.size, w.size);
        CHECK_EQ(o.entry.crc32, w.crc32);
        REQUIRE_EQ(o.bytes.size(), w.size);
        CHECK(std::equal(o.bytes.begin(), o.bytes.end(), bytes.begin() + static_cast<std::ptrdiff_t>(w.data_offset)));
      }
    }
  }
}

TEST_CASE("before their records come, zip storages are ranked in string order of keys") {
  // scalars_empty.pt has 8 storages; legacy_views_tied.pt's offsets are real.
  std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/torch/scalars_empty.pt");
  io::MemStreamSource src("in", bytes);
  StreamCheckpointReader r(&src);
  REQUIRE(r.ReadModel().ok());
  const Checkpoint& c = r.checkpoint();
  REQUIRE_GE(c.storages.size(), 2u);
  std::vector<std::string> keys;
  for (const Storage& s : c.storages) keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  for (const Storage& s : c.storages) {
    CAPTURE(s.key);
    CHECK_EQ(s.data_offset, static_cast<uint64_t>(std::find(keys.begin(), keys.end(), s.key) - keys.begin()));
    CHECK_EQ(s.record_size, s.nbytes);
    CHECK_EQ(s.record, "scalars_empty/data/" + s.key);
  }

  std::vector<std::byte> legacy = ReadFileBytes(SourceRoot() + "/fixtures/torch/legacy_views_tied.pt");
  io::MemSource file("legacy", legacy);
  Checkpoint want = ReadCheckpoint(file).value();
  io::MemStreamSource lsrc("in", legacy);
  StreamCheckpointReader lr(&lsrc);
  REQUIRE(lr.ReadModel().ok());
  REQUIRE_EQ(lr.checkpoint().storages.size(), want.storages.size());
  for (size_t i = 0; i < want.storages.size(); ++i) {
    CHECK_EQ(lr.checkpoint().storages[i].data_offset, want.storages[i].data_offset);
    CHECK_EQ(lr.checkpoint().storages[i].record, want.storages[i].record);
  }
}

// Reads a prefix of a file to the first error, which must come.
Status StreamPrefix(const std::vector<std::byte>& bytes, size_t cut) {
  Result<Streamed> r = StreamAll(std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)),
                                 64, 100);
  REQUIRE_FALSE(r.ok());
  return r.status();
}

TEST_CASE("every strict prefix of a zip or legacy file is corrupt, at an offset inside the prefix") {
  for (const char* name : {"views.pt", "zip_rewritten.pt", "legacy_views_tied.pt"}) {
    std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/torch/" + name);
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      CAPTURE(name);
      CAPTURE(cut);
      Status s = StreamPrefix(bytes, cut);
      CHECK_EQ(s.code(), Code::kCorrupt);
      CHECK_NE(s.offset(), kNoOffset);
      CHECK_LE(s.offset(), cut);
    }
  }
}

TEST_CASE("a stream that ends inside storage data names the record and where it ended") {
  std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/torch/views.pt");
  io::MemSource file("views", bytes);
  Checkpoint want = ReadCheckpoint(file).value();
  const Storage& s0 = want.storages[0];
  const uint64_t cut = s0.data_offset + 10;
  Status s = StreamPrefix(bytes, cut);
  CHECK_EQ(s.code(), Code::kCorrupt);
  CHECK_EQ(s.record(), s0.record);
  CHECK_EQ(s.offset(), cut);
  CHECK_EQ(s.message(), "stream ends inside entry data (10 of " + std::to_string(s0.nbytes) + " bytes)");

  std::vector<std::byte> legacy = ReadFileBytes(SourceRoot() + "/fixtures/torch/legacy_views_tied.pt");
  io::MemSource lfile("legacy", legacy);
  Checkpoint lwant = ReadCheckpoint(lfile).value();
  const Storage* first = &lwant.storages[0];
  for (const Storage& x : lwant.storages)
    if (x.data_offset < first->data_offset) first = &x;
  Status ls = StreamPrefix(legacy, first->data_offset + 10);
  CHECK_EQ(ls.code(), Code::kCorrupt);
  CHECK_EQ(ls.record(), first->record);
  CHECK_EQ(ls.offset(), first->data_offset);
  CHECK_EQ(ls.message(), "record " + first->record + " has 10 bytes, storage declares " +
                             std::to_string(first->nbytes));
}

std::vector<std::byte> TwoTensorPickle() {
  testing::PickleWriter p;
  p.Proto(2).EmptyDict().Mark();
  p.Str("a").TensorV2("FloatStorage", "0", 4, 0, {4}, {1});
  p.Str("b").TensorV2("FloatStorage", "1", 2, 0, {2}, {1});
  p.SetItems().Stop();
  return p.bytes();
}

TEST_CASE("layouts a pipe cannot read are refused, naming the record") {
  std::vector<std::byte> pkl = TwoTensorPickle();
  std::vector<std::byte> d0(16, std::byte{1}), d1(8, std::byte{2}), version{std::byte{'3'}, std::byte{'\n'}};

  // Torch's order streams; so does any order of the storages, and other
  // records before data.pkl.
  for (const Records& records : std::vector<Records>{
           {{"data.pkl", pkl}, {"data/0", d0}, {"data/1", d1}, {"version", version}},
           {{"data.pkl", pkl}, {"data/1", d1}, {"data/0", d0}, {"version", version}},
           {{"version", version}, {"data.pkl", pkl}, {"data/1", d1}, {"data/0", d0}}}) {
    Result<Streamed> r = StreamAll(ArchiveOf(records), 5);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK_EQ(r->storages.size(), 2u);
    REQUIRE_EQ(r->others.size(), 1u);
    CHECK_EQ(r->others[0].entry.name, "top/version");
  }

  // A storage record before data.pkl: its size is not known yet.
  Result<Streamed> early = StreamAll(ArchiveOf({{"data/0", d0}, {"data.pkl", pkl}, {"data/1", d1}}), 5);
  REQUIRE_FALSE(early.ok());
  CHECK_EQ(early.status().code(), Code::kUnsupported);
  CHECK_EQ(early.status().record(), "top/data/0");
  CHECK_EQ(early.status().offset(), 0u);
  CHECK_EQ(early.status().message(),
           "storage record top/data/0 comes before top/data.pkl, which gives its size; a pipe or .zst input is "
           "read in one pass, which needs torch's own layout: give the file's path instead");

  // A record under data/ that no storage names is skipped; a missing
  // storage record is found at the end.
  Result<Streamed> orphan = StreamAll(ArchiveOf({{"data.pkl", pkl}, {"data/0", d0}, {"data/7", d1}, {"data/1", d1}}), 5);
  REQUIRE_MESSAGE(orphan.ok(), orphan.status().ToString());
  CHECK_EQ(orphan->storages.size(), 2u);
  Result<Streamed> missing = StreamAll(ArchiveOf({{"data.pkl", pkl}, {"data/0", d0}, {"version", version}}), 5);
  REQUIRE_FALSE(missing.ok());
  CHECK_EQ(missing.status().code(), Code::kCorrupt);
  CHECK_EQ(missing.status().record(), "top/data/1");
  CHECK_EQ(missing.status().message(), "storage '1' has no record top/data/1");

  // A short storage record: the zip reader finds the sizes disagree.
  Result<Streamed> short_record =
      StreamAll(ArchiveOf({{"data.pkl", pkl}, {"data/0", d0}, {"data/1", std::vector<std::byte>(4)}}), 5);
  REQUIRE_FALSE(short_record.ok());
  CHECK_EQ(short_record.status().code(), Code::kCorrupt);
  CHECK_EQ(short_record.status().record(), "top/data/1");

  // Records outside the top folder, and no data.pkl at all.
  io::MemSink sink;
  zip::Writer w(&sink);
  REQUIRE(w.AddEntry("top/data.pkl", pkl).ok());
  REQUIRE(w.AddEntry("other/data/0", d0).ok());
  REQUIRE(w.Finish().ok());
  Result<Streamed> two_tops = StreamAll(sink.bytes(), 5);
  REQUIRE_FALSE(two_tops.ok());
  CHECK_EQ(two_tops.status().code(), Code::kCorrupt);
  CHECK_EQ(two_tops.status().record(), "other/data/0");
  Result<Streamed> no_pickle = StreamAll(ArchiveOf({{"version", version}}), 5);
  REQUIRE_FALSE(no_pickle.ok());
  CHECK_EQ(no_pickle.status().code(), Code::kCorrupt);
  CHECK_EQ(no_pickle.status().message(), "the archive has no top/data.pkl");
}

TEST_CASE("other records are kept whole up to their limit, and byteorder is read") {
  std::vector<std::byte> pkl = TwoTensorPickle();
  std::vector<std::byte> d0(16), d1(8);
  Result<Streamed> big = StreamAll(ArchiveOf({{"data.pkl", pkl}, {"byteorder", TextBytes("big")}, {"data/0", d0}, {"data/1", d1}}), 5);
  REQUIRE(big.ok());
  CHECK(big->ckpt.big_endian);
  Result<Streamed> odd = StreamAll(ArchiveOf({{"data.pkl", pkl}, {"byteorder", TextBytes("middle")}, {"data/0", d0}, {"data/1", d1}}), 5);
  REQUIRE_FALSE(odd.ok());
  CHECK_EQ(odd.status().code(), Code::kCorrupt);
  CHECK_EQ(odd.status().message(), "byteorder record says \"middle\", expected \"little\" or \"big\"");
  Result<Streamed> huge = StreamAll(
      ArchiveOf({{"data.pkl", pkl}, {"data/0", d0}, {"data/1", d1}, {"notes", std::vector<std::byte>(kMaxOtherRecordBytes + 1)}}),
      1 << 16);
  REQUIRE_FALSE(huge.ok());
  CHECK_EQ(huge.status().code(), Code::kLimit);
  CHECK_EQ(huge.status().record(), "top/notes");
}

TEST_CASE("after an error every call repeats it") {
  std::vector<std::byte> bytes = ReadFileBytes(SourceRoot() + "/fixtures/torch/views.pt");
  bytes.resize(bytes.size() / 2);
  io::MemStreamSource src("in", bytes, 64);
  StreamCheckpointReader r(&src);
  Status first;
  if (Status s = r.ReadModel(); !s.ok()) first = s;
  std::vector<std::byte> buf(100);
  while (first.ok()) {
    Result<std::optional<uint32_t>> s = r.NextStorage();
    if (!s.ok()) { first = s.status(); break; }
    REQUIRE(s->has_value());
    while (true) {
      Result<size_t> n = r.Read(buf);
      if (!n.ok()) { first = n.status(); break; }
      if (*n == 0) break;
    }
  }
  REQUIRE_EQ(first.code(), Code::kCorrupt);
  CHECK_EQ(r.NextStorage().status().message(), first.message());
  CHECK_EQ(r.Finish().message(), first.message());
}

TEST_CASE("a stream that is no torch file is refused as ReadCheckpoint refuses it") {
  struct Case {
    std::string text;
    Code code;
    bool same_message;  // the empty file's message says "file", the stream's "stream"
  };
  for (const Case& c : std::vector<Case>{{"PYTORCH1 and more", Code::kUnsupported, true},
                                         {"", Code::kCorrupt, false},
                                         {"hello world", Code::kCorrupt, true}}) {
    CAPTURE(c.text);
    std::vector<std::byte> b = TextBytes(c.text);
    io::MemSource file("x", b);
    Status want = ReadCheckpoint(file).status();
    Result<Streamed> got = StreamAll(b, 3);
    REQUIRE_FALSE(got.ok());
    CHECK_EQ(got.status().code(), c.code);
    CHECK_EQ(want.code(), c.code);
    CHECK_EQ(got.status().offset(), want.offset());
    if (c.same_message) CHECK_EQ(got.status().message(), want.message());
  }
}

}  // namespace
}  // namespace zerofold::torch
