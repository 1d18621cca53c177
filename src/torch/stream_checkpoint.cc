#include "torch/stream_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "pickle/decoder.h"
#include "torch/format.h"
#include "torch/legacy.h"
#include "torch/tensor_recognizer.h"
#include "torch/zip_checkpoint.h"
#include "zip/crc32.h"
#include "zip/entry_name.h"
#include "zip/format.h"
#include "zip/stream_reader.h"

namespace zerofold::torch {
namespace {

using pickle::Kind;

// Enough to see the tar magic (torch/checkpoint.cc sniffs the same bytes).
constexpr size_t kSniffBytes = kTarMagicOffset + 8;
// safetensors: header: the u64 length before the JSON.
constexpr size_t kSafetensorsLengthBytes = 8;
// The first look at a legacy pickle; grown fourfold while it is truncated.
constexpr size_t kFirstPickleChunk = 64 << 10;
// Bytes of storage data passed through per read when skipping.
constexpr size_t kSkipChunk = 1 << 20;

constexpr std::string_view kUseAPath =
    "; a pipe or .zst input is read in one pass, which needs torch's own layout: give the file's path instead";

// A forward-only source that can look ahead: Peek(n) buffers up to n bytes
// without consuming them. Reads drain the buffer before the source.
class Lookahead final : public StreamSource {
 public:
  explicit Lookahead(StreamSource* src) : src_(src) {}

  // Up to n bytes from the current position; fewer only at end of stream.
  Result<std::span<const std::byte>> Peek(size_t n) {
    if (end_ - begin_ < n) {
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      if (buf_.size() < n) buf_.resize(n);
      while (end_ < n && !eof_) {
        ZF_ASSIGN_OR_RETURN(size_t got, src_->Read(std::span<std::byte>(buf_).subspan(end_, n - end_)));
        if (got == 0) eof_ = true;
        end_ += got;
      }
    }
    return std::span<const std::byte>(buf_.data() + begin_, std::min(n, end_ - begin_));
  }
  // REQUIRES: n <= bytes last peeked.
  void Consume(size_t n) { begin_ += n; }

  Result<size_t> Read(std::span<std::byte> dst) override {
    if (begin_ < end_) {
      size_t n = std::min(dst.size(), end_ - begin_);
      std::memcpy(dst.data(), buf_.data() + begin_, n);
      begin_ += n;
      if (begin_ == end_) {
        // Storage bytes pass through afterwards: do not keep a large buffer.
        begin_ = end_ = 0;
        if (buf_.size() > kFirstPickleChunk) std::vector<std::byte>().swap(buf_);
      }
      return n;
    }
    if (eof_ || dst.empty()) return size_t{0};
    return src_->Read(dst);
  }
  uint64_t position() const override { return src_->position() - (end_ - begin_); }
  const std::string& name() const override { return src_->name(); }

 private:
  StreamSource* src_;
  std::vector<std::byte> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
};

}  // namespace

class StreamCheckpointReader::Impl {
 public:
  Impl(StreamSource* src, const ReadOptions& options) : la_(src), options_(options) {}

  Status ReadModel();
  Result<std::optional<uint32_t>> NextStorage();
  Result<size_t> Read(std::span<std::byte> dst);
  Status Finish();
  uint64_t position() const { return zip_ ? zip_->position() : la_.position(); }

  Checkpoint ckpt;
  std::vector<OtherRecord> others;
  // A failure repeats: after one, the stream position is lost.
  Status failed;

 private:
  Status ReadZipModel();
  Status ReadLegacyModel();
  Result<pickle::Decoded> DecodeNextPickle(std::string_view record);
  Status CheckTopFolder(const zip::StreamEntry& e);
  void CountRecord(const zip::StreamEntry& e) {
    ++ckpt.zip_records;
    ckpt.deflated_records += e.method == zip::kMethodDeflated;
  }
  std::string_view Relative(const zip::StreamEntry& e) const { return std::string_view(e.name).substr(top_.size() + 1); }
  Status ReadOther(const zip::StreamEntry& e);
  Status ReadDataPickle(const zip::StreamEntry& e);
  Status PlaceStorages();
  Result<std::optional<uint32_t>> NextZipStorage();
  Result<std::optional<uint32_t>> NextLegacyStorage();
  Status SkipRestOfStorage();
  Status CheckAllLocated() const;

  Lookahead la_;
  ReadOptions options_;
  std::unique_ptr<zip::StreamReader> zip_;
  std::string top_;                                // zip: the top folder
  std::unordered_map<std::string, uint32_t> by_key_;
  std::vector<bool> located_;
  std::vector<uint32_t> legacy_order_;            // legacy: storages in key list order
  size_t legacy_next_ = 0;
  std::optional<uint32_t> current_;               // the storage being read
  uint64_t done_ = 0;                             // its bytes read
  bool storages_done_ = false;                    // NextStorage returned nullopt
  bool finished_ = false;
};

// ---- Common ----

Status StreamCheckpointReader::Impl::ReadModel() {
  ZF_ASSIGN_OR_RETURN(std::span<const std::byte> head, la_.Peek(kSniffBytes));
  std::string_view text = io::AsChars(head);
  if (text.starts_with(kPreviewMagic))
    return Status::Unsupported("an archive of torch's preview release (starts with \"PYTORCH1\"), which torch no "
                               "longer reads either")
        .WithOffset(0);
  if (text.starts_with(kZipLocalHeaderMagic)) {
    ZF_TRY(ReadZipModel());
  } else if (text.size() > kSafetensorsLengthBytes && text[kSafetensorsLengthBytes] == '{') {
    // An 8-byte header length, then the JSON header: a safetensors file,
    // whose tensors are found by offsets (model::SniffFormat reads files).
    return Status::Unsupported("a safetensors file, which is read at its tensors' offsets: it cannot come from a "
                               "stream ('-', .zst); save it to a file first")
        .WithOffset(0);
  } else if (text.size() >= kTarMagicOffset + kTarMagic.size() &&
             text.substr(kTarMagicOffset, kTarMagic.size()) == kTarMagic) {
    return Status::Unsupported("a tar archive: the format of the earliest torch releases (members storages, "
                               "tensors, pickle)")
        .WithOffset(kTarMagicOffset);
  } else {
    ZF_TRY(ReadLegacyModel());
  }
  return CheckViews(ckpt);
}

Status StreamCheckpointReader::Impl::CheckAllLocated() const {
  for (size_t i = 0; i < ckpt.storages.size(); ++i) {
    if (located_[i]) continue;
    const Storage& s = ckpt.storages[i];
    if (ckpt.format == Format::kTorchZip)
      return Status::Corrupt("storage '" + s.key + "' has no record " + s.record).WithRecord(s.record);
    return Status::Corrupt("storage '" + s.key + "' is not in the storage key list, so the file holds no bytes for it")
        .WithRecord(s.record);
  }
  return Status::OK();
}

Result<std::optional<uint32_t>> StreamCheckpointReader::Impl::NextStorage() {
  if (storages_done_) return std::optional<uint32_t>();
  if (ckpt.format == Format::kTorchZip) return NextZipStorage();
  return NextLegacyStorage();
}

Result<size_t> StreamCheckpointReader::Impl::Read(std::span<std::byte> dst) {
  if (!current_) return Status::InvalidArgument("Read without a current storage");
  const Storage& s = ckpt.storages[*current_];
  const size_t want = static_cast<size_t>(std::min<uint64_t>(dst.size(), s.nbytes - done_));
  if (want == 0) return size_t{0};
  size_t got;
  if (zip_) {
    ZF_ASSIGN_OR_RETURN(got, zip_->Read(dst.first(want)));
  } else {
    ZF_ASSIGN_OR_RETURN(got, la_.Read(dst.first(want)));
  }
  if (got == 0)  // the zip reader fails instead; a legacy file just ends
    return Status::Corrupt("record " + s.record + " has " + std::to_string(done_) + " bytes, storage declares " +
                           std::to_string(s.nbytes))
        .WithOffset(s.data_offset)
        .WithRecord(s.record);
  done_ += got;
  return got;
}

Status StreamCheckpointReader::Impl::SkipRestOfStorage() {
  if (!current_) return Status::OK();
  std::vector<std::byte> scratch(kSkipChunk);
  while (true) {
    ZF_ASSIGN_OR_RETURN(size_t got, Read(scratch));
    if (got == 0) break;
  }
  current_.reset();
  return Status::OK();
}

Status StreamCheckpointReader::Impl::Finish() {
  if (finished_) return Status::OK();
  while (true) {
    ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> s, NextStorage());
    if (!s) break;
  }
  if (zip_) {
    ZF_TRY(ExplainTorchScript(zip_->Finish()));
  } else {
    // torch's loader stops after the last storage; so do we, but the
    // report counts the whole input.
    std::vector<std::byte> scratch(kSkipChunk);
    while (true) {
      ZF_ASSIGN_OR_RETURN(size_t got, la_.Read(scratch));
      if (got == 0) break;
    }
  }
  finished_ = true;
  return Status::OK();
}

// ---- Zip archives ----

Status StreamCheckpointReader::Impl::CheckTopFolder(const zip::StreamEntry& e) {
  std::string_view top = zip::TopFolder(e.name);
  if (top_.empty()) top_ = std::string(top);
  if (top.empty() || top != top_ || e.name.size() <= top_.size() + 1)
    return Status::Corrupt("the archive's records do not share one top folder (the first is in \"" + top_ + "\")")
        .WithRecord(e.name)
        .WithOffset(e.header_offset);
  if (IsTorchScriptRecord(Relative(e))) return TorchScriptArchive(e.name, e.header_offset);
  return Status::OK();
}

Status StreamCheckpointReader::Impl::ReadOther(const zip::StreamEntry& e) {
  OtherRecord rec;
  rec.entry.name = e.name;
  rec.entry.header_offset = e.header_offset;
  rec.entry.data_offset = e.data_offset;
  ZF_ASSIGN_OR_RETURN(rec.bytes, zip_->ReadAll(kMaxOtherRecordBytes));
  rec.entry.size = rec.bytes.size();
  rec.entry.crc32 = zip::Crc32(0, rec.bytes);
  if (Relative(e) == kByteOrderRecord) {
    std::string_view text = io::AsChars(rec.bytes);
    if (rec.bytes.size() > kMaxByteOrderBytes)
      return Status::Corrupt("byteorder record has " + std::to_string(rec.bytes.size()) +
                             " bytes, expected \"little\" or \"big\"")
          .WithRecord(e.name)
          .WithOffset(e.data_offset);
    if (text != kByteOrderBig && text != kByteOrderLittle)
      return Status::Corrupt("byteorder record says \"" + std::string(text) + "\", expected \"little\" or \"big\"")
          .WithRecord(e.name)
          .WithOffset(e.data_offset);
    ckpt.big_endian = text == kByteOrderBig;
  }
  ckpt.other_records.push_back(rec.entry);
  others.push_back(std::move(rec));
  return Status::OK();
}

Status StreamCheckpointReader::Impl::ReadDataPickle(const zip::StreamEntry& e) {
  Result<std::vector<std::byte>> bytes = zip_->ReadAll(options_.max_pickle_bytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kLimit)
      return Status::Limit(e.name + " has more than " + std::to_string(options_.max_pickle_bytes) +
                           " bytes (--max-pickle-bytes)")
          .WithRecord(e.name)
          .WithOffset(e.data_offset);
    return bytes.status();
  }
  Result<pickle::Decoded> d = pickle::Decode(*bytes, e.data_offset, options_.pickle);
  if (!d.ok()) return Status(d.status()).WithRecord(e.name);
  // torch never writes bytes after STOP (as ReadZipCheckpoint, which see).
  if (d->consumed != bytes->size())
    return Status::Corrupt(e.name + " has " + std::to_string(bytes->size() - d->consumed) + " bytes after STOP")
        .WithRecord(e.name)
        .WithOffset(e.data_offset + d->consumed);
  ckpt.pickle_offset = e.data_offset;
  ckpt.pickle_size = bytes->size();
  ckpt.graph = std::move(d->graph);
  ckpt.root = d->root;
  ckpt.unsafe_globals = std::move(d->unsafe_globals);
  Result<Recognized> rec = RecognizeTensors(ckpt.graph, ckpt.root, RecognizeOptionsFor(Format::kTorchZip, options_));
  if (!rec.ok()) return Status(rec.status()).WithRecord(e.name);
  ckpt.storages = std::move(rec->storages);
  ckpt.tensors = std::move(rec->tensors);
  return Status::OK();
}

Status StreamCheckpointReader::Impl::ReadZipModel() {
  ckpt.format = Format::kTorchZip;
  zip_ = std::make_unique<zip::StreamReader>(&la_, options_.zip);
  bool any = false;
  std::string pickle_name;  // the data.pkl record and the offset of its data
  uint64_t pickle_offset = 0;
  while (true) {
    Result<const zip::StreamEntry*> next = zip_->Next();
    if (!next.ok()) return ExplainTorchScript(next.status());
    const zip::StreamEntry* e = *next;
    if (e == nullptr) {
      if (!any) return Status::Corrupt("the archive has no records").WithOffset(zip_->position());
      std::string name = top_ + "/" + std::string(kDataPickleRecord);
      return Status::Corrupt("the archive has no " + name).WithRecord(name).WithOffset(zip_->position());
    }
    any = true;
    CountRecord(*e);
    ZF_TRY(CheckTopFolder(*e));
    std::string_view rel = Relative(*e);
    if (rel == kDataPickleRecord) {
      pickle_name = e->name;
      pickle_offset = e->data_offset;
      ZF_TRY(ReadDataPickle(*e));
      break;
    }
    if (rel.starts_with(kDataFolder))
      return Status::Unsupported("storage record " + e->name + " comes before " + top_ + "/" +
                                 std::string(kDataPickleRecord) + ", which gives its size" + std::string(kUseAPath))
          .WithRecord(e->name)
          .WithOffset(e->header_offset);
    ZF_TRY(ReadOther(*e));
  }
  ckpt.top_folder = top_;
  // Until its record comes, a storage's data_offset is its rank in string
  // order of the keys: the order torch writes the records in.
  std::vector<uint32_t> by_name(ckpt.storages.size());
  std::iota(by_name.begin(), by_name.end(), 0u);
  std::sort(by_name.begin(), by_name.end(),
            [&](uint32_t a, uint32_t b) { return ckpt.storages[a].key < ckpt.storages[b].key; });
  for (uint32_t rank = 0; rank < by_name.size(); ++rank) {
    Storage& s = ckpt.storages[by_name[rank]];
    s.record = top_ + "/" + std::string(kDataFolder) + s.key;
    // A record name the zip reader would refuse cannot come: refused here,
    // where the key is (the file form refuses it in the central directory).
    if (Status bad = zip::CheckEntryName(s.record); !bad.ok())
      return Status::Corrupt("storage key '" + s.key + "': " + bad.message()).WithRecord(pickle_name).WithOffset(pickle_offset);
    s.data_offset = rank;
    s.record_size = s.nbytes;
    by_key_.emplace(s.key, by_name[rank]);
  }
  located_.assign(ckpt.storages.size(), false);
  return Status::OK();
}

Result<std::optional<uint32_t>> StreamCheckpointReader::Impl::NextZipStorage() {
  current_.reset();
  while (true) {
    // Next() reads past the rest of the current record and checks its CRC-32.
    Result<const zip::StreamEntry*> next = zip_->Next();
    if (!next.ok()) return ExplainTorchScript(next.status());
    const zip::StreamEntry* e = *next;
    if (e == nullptr) {
      storages_done_ = true;
      ZF_TRY(CheckAllLocated());
      return std::optional<uint32_t>();
    }
    CountRecord(*e);
    ZF_TRY(CheckTopFolder(*e));
    std::string_view rel = Relative(*e);
    if (!rel.starts_with(kDataFolder)) {
      ZF_TRY(ReadOther(*e));
      continue;
    }
    auto it = by_key_.find(std::string(rel.substr(kDataFolder.size())));
    if (it == by_key_.end()) continue;  // no storage names it: skipped, as torch.load ignores it
    Storage& s = ckpt.storages[it->second];
    if (e->size_known) {
      // Never zero-fill: a short record means the file lost data.
      if (e->size < s.nbytes)
        return Status::Corrupt("record " + s.record + " has " + std::to_string(e->size) + " bytes, storage declares " +
                               std::to_string(s.nbytes))
            .WithRecord(s.record)
            .WithOffset(e->data_offset);
      s.record_size = e->size;
    } else {
      ZF_TRY(zip_->DeclareSize(s.nbytes));
      s.record_size = s.nbytes;
    }
    s.data_offset = e->data_offset;
    located_[it->second] = true;
    current_ = it->second;
    done_ = 0;
    return current_;
  }
}

// ---- Legacy files ----

Result<pickle::Decoded> StreamCheckpointReader::Impl::DecodeNextPickle(std::string_view record) {
  const uint64_t offset = la_.position();
  const uint64_t cap = options_.max_pickle_bytes;
  uint64_t chunk = std::min<uint64_t>(cap, kFirstPickleChunk);
  while (true) {
    if (!std::in_range<size_t>(chunk))
      return Status::Limit("pickle is larger than this machine can hold").WithOffset(offset).WithRecord(record);
    ZF_ASSIGN_OR_RETURN(std::span<const std::byte> have, la_.Peek(static_cast<size_t>(chunk)));
    if (have.empty())
      return Status::Corrupt("truncated: the stream ends at " + std::to_string(offset) + " before this pickle")
          .WithOffset(offset)
          .WithRecord(record);
    Result<pickle::Decoded> d = pickle::Decode(have, offset, options_.pickle);
    if (d.ok()) {
      la_.Consume(static_cast<size_t>(d->consumed));
      return d;
    }
    const bool at_end = have.size() < chunk;
    if (!IsTruncation(d.status()) || at_end) return Status(d.status()).WithRecord(record);
    if (chunk == cap)
      return Status::Limit("pickle is larger than " + std::to_string(cap) + " bytes (--max-pickle-bytes)")
          .WithOffset(offset)
          .WithRecord(record);
    chunk = std::min(cap, chunk * 4);
  }
}

Status StreamCheckpointReader::Impl::ReadLegacyModel() {
  ckpt.format = Format::kTorchLegacy;
  // 1. Magic number. A stream that fails here is not a torch file at all.
  Result<pickle::Decoded> magic = DecodeNextPickle(kMagicRecord);
  ZF_TRY(CheckLegacyMagic(magic));

  // 2. Protocol version.
  const uint64_t protocol_offset = la_.position();
  ZF_ASSIGN_OR_RETURN(pickle::Decoded protocol, DecodeNextPickle(kProtocolRecord));
  ZF_TRY(CheckLegacyProtocol(protocol, protocol_offset));

  // 3. sys_info, which torch's loader ignores.
  ZF_ASSIGN_OR_RETURN(pickle::Decoded sys_info, DecodeNextPickle(kSysInfoRecord));

  // 4. The object.
  ckpt.pickle_offset = la_.position();
  ZF_ASSIGN_OR_RETURN(pickle::Decoded object, DecodeNextPickle(kObjectRecord));
  ckpt.pickle_size = object.consumed;
  ckpt.graph = std::move(object.graph);
  ckpt.root = object.root;
  ckpt.unsafe_globals = std::move(object.unsafe_globals);
  for (const pickle::Decoded* small : {&*magic, &protocol, &sys_info}) MergeLegacyUnsafe(ckpt.unsafe_globals, *small);
  Result<Recognized> rec =
      RecognizeTensors(ckpt.graph, ckpt.root, RecognizeOptionsFor(Format::kTorchLegacy, options_));
  if (!rec.ok()) return Status(rec.status()).WithRecord(kObjectRecord);
  ckpt.storages = std::move(rec->storages);
  ckpt.tensors = std::move(rec->tensors);

  // 5. The storage keys: the order of the storages that follow.
  const uint64_t keys_offset = la_.position();
  ZF_ASSIGN_OR_RETURN(pickle::Decoded keys, DecodeNextPickle(kKeysRecord));
  uint64_t offset = la_.position();
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> key_list, LegacyStorageKeys(keys, keys_offset));
  MergeLegacyUnsafe(ckpt.unsafe_globals, keys);
  for (uint32_t i = 0; i < ckpt.storages.size(); ++i) by_key_.emplace(ckpt.storages[i].key, i);
  located_.assign(ckpt.storages.size(), false);
  for (const std::string& key : key_list) {
    std::string record = LegacyStorageRecord(key);
    ZF_ASSIGN_OR_RETURN(uint32_t index, LocateLegacyKey(by_key_, located_, key, offset));
    Storage& s = ckpt.storages[index];
    s.record = record;
    s.data_offset = offset + kLegacyCountSize;
    s.record_size = s.nbytes;
    std::optional<uint64_t> next = io::CheckedAdd<uint64_t>(s.data_offset, s.nbytes);
    if (!next)
      return Status::Corrupt("storage '" + key + "' of " + std::to_string(s.nbytes) + " bytes ends past 2^64")
          .WithOffset(offset)
          .WithRecord(record);
    offset = *next;
    legacy_order_.push_back(index);
  }
  return CheckAllLocated().WithOffset(keys_offset);
}

Result<std::optional<uint32_t>> StreamCheckpointReader::Impl::NextLegacyStorage() {
  ZF_TRY(SkipRestOfStorage());
  if (legacy_next_ == legacy_order_.size()) {
    storages_done_ = true;
    return std::optional<uint32_t>();
  }
  const uint32_t index = legacy_order_[legacy_next_++];
  const Storage& s = ckpt.storages[index];
  const uint64_t at = la_.position();
  std::byte count_bytes[kLegacyCountSize];
  Status read = ReadExact(la_, count_bytes);
  if (!read.ok()) return read.WithRecord(s.record);
  const uint64_t count = io::DecodeU64le(count_bytes);
  const uint32_t itemsize = s.untyped ? 1 : Info(s.dtype).itemsize;
  const uint64_t declared = s.nbytes / itemsize;
  if (count != declared)
    return Status::Corrupt("record " + s.record + " counts " + std::to_string(count) + " elements, storage declares " +
                           std::to_string(declared))
        .WithOffset(at)
        .WithRecord(s.record);
  if (at + kLegacyCountSize != s.data_offset)
    return Status::Internal("storage " + s.record + " begins at " + std::to_string(at + kLegacyCountSize) +
                            ", the key list placed it at " + std::to_string(s.data_offset));
  current_ = index;
  done_ = 0;
  return current_;
}

// ---- The public class ----

StreamCheckpointReader::StreamCheckpointReader(StreamSource* src, const ReadOptions& options)
    : impl_(std::make_unique<Impl>(src, options)) {}

StreamCheckpointReader::~StreamCheckpointReader() = default;

Checkpoint& StreamCheckpointReader::checkpoint() { return impl_->ckpt; }
const Checkpoint& StreamCheckpointReader::checkpoint() const { return impl_->ckpt; }
const std::vector<OtherRecord>& StreamCheckpointReader::other_records() const { return impl_->others; }
uint64_t StreamCheckpointReader::position() const { return impl_->position(); }

Status StreamCheckpointReader::ReadModel() {
  if (!impl_->failed.ok()) return impl_->failed;
  Status s = impl_->ReadModel();
  if (!s.ok()) impl_->failed = s;
  return s;
}

Result<std::optional<uint32_t>> StreamCheckpointReader::NextStorage() {
  if (!impl_->failed.ok()) return impl_->failed;
  Result<std::optional<uint32_t>> r = impl_->NextStorage();
  if (!r.ok()) impl_->failed = r.status();
  return r;
}

Result<size_t> StreamCheckpointReader::Read(std::span<std::byte> dst) {
  if (!impl_->failed.ok()) return impl_->failed;
  Result<size_t> r = impl_->Read(dst);
  if (!r.ok() && r.status().code() != Code::kInvalidArgument) impl_->failed = r.status();
  return r;
}

Status StreamCheckpointReader::Finish() {
  if (!impl_->failed.ok()) return impl_->failed;
  Status s = impl_->Finish();
  if (!s.ok()) impl_->failed = s;
  return s;
}

}  // namespace zerofold::torch
