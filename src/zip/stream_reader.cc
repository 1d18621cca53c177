#include "zip/stream_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "io/cursor.h"
#include "zip/central_directory.h"
#include "zip/crc32.h"
#include "zip/describe.h"
#include "zip/end_records.h"
#include "zip/entry_name.h"
#include "zip/extra_field.h"
#include "zip/format.h"
#include "zip/local_header.h"

namespace zerofold::zip {
namespace {

// Bytes asked of the source per read when buffering.
constexpr size_t kChunk = 1 << 16;

// The rest of a stream, held in memory from absolute offset `base`, seen
// as a RandomSource so the end records can be read as from a file. Bytes
// before `base` read as zeros: no zip record starts with a zero signature,
// so a pointer into them fails its signature check.
class TailSource final : public RandomSource {
 public:
  TailSource(uint64_t base, std::span<const std::byte> tail, const std::string& name)
      : base_(base), tail_(tail), name_(name) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    size_t done = 0;
    while (done < dst.size() && offset < size()) {
      size_t n;
      if (offset < base_) {
        n = static_cast<size_t>(std::min<uint64_t>(dst.size() - done, base_ - offset));
        std::memset(dst.data() + done, 0, n);
      } else {
        n = static_cast<size_t>(std::min<uint64_t>(dst.size() - done, size() - offset));
        std::memcpy(dst.data() + done, tail_.data() + (offset - base_), n);
      }
      done += n;
      offset += n;
    }
    return done;
  }
  uint64_t size() const override { return base_ + tail_.size(); }
  const std::string& name() const override { return name_; }

 private:
  uint64_t base_;
  std::span<const std::byte> tail_;
  const std::string& name_;
};

struct Descriptor {
  uint32_t crc32;
  uint64_t compressed_size;
  uint64_t uncompressed_size;
};

// The data descriptor's fields after its (optional) signature; sizes are 8
// bytes when the local header had a zip64 block (APPNOTE 4.3.9.2).
// Unchecked: REQUIRES DescriptorSize(zip64) - kSignatureSize bytes at p.
Descriptor DecodeDescriptor(const std::byte* p, bool zip64) {
  Descriptor d;
  d.crc32 = io::DecodeU32le(p + kDescriptorCrcOffset);
  const std::byte* sizes = p + kDescriptorCompressedSizeOffset;
  d.compressed_size = zip64 ? io::DecodeU64le(sizes) : io::DecodeU32le(sizes);
  d.uncompressed_size = zip64 ? io::DecodeU64le(sizes + 8) : io::DecodeU32le(sizes + 4);
  return d;
}

// With the signature.
size_t DescriptorSize(bool zip64) { return zip64 ? kZip64DataDescriptorSize : kDataDescriptorSize; }

}  // namespace

// The compressed bytes of the current entry, from the reader's buffer.
class StreamReader::Feed final : public InflateInput {
 public:
  explicit Feed(StreamReader* reader) : reader_(reader) {}
  Result<std::span<const std::byte>> Next() override { return reader_->NextCompressed(); }

 private:
  StreamReader* reader_;
};

StreamReader::StreamReader(StreamSource* src, const ReadOptions& options)
    : src_(src), options_(options) {}

Status StreamReader::Remember(Status status) {
  if (!status.ok() && status.code() != Code::kInvalidArgument && failed_.ok()) failed_ = status;
  return status;
}

Result<const StreamEntry*> StreamReader::Next() {
  if (!failed_.ok()) return failed_;
  return Remember(NextImpl());
}

Result<size_t> StreamReader::Read(std::span<std::byte> dst) {
  if (!failed_.ok()) return failed_;
  return Remember(ReadImpl(dst));
}

Result<std::vector<std::byte>> StreamReader::ReadAll(uint64_t max_bytes) {
  if (!failed_.ok()) return failed_;
  return Remember(ReadAllImpl(max_bytes));
}

Status StreamReader::FinishEntry() {
  if (!failed_.ok()) return failed_;
  return Remember(FinishEntryImpl());
}

Status StreamReader::Finish() {
  if (!failed_.ok()) return failed_;
  return Remember(FinishImpl());
}

uint64_t StreamReader::position() const { return src_->position() - (end_ - begin_); }

Status StreamReader::Corrupt(std::string message, uint64_t offset) const {
  Status s = Status::Corrupt(std::move(message));
  s.WithOffset(offset);
  if (state_ == State::kInEntry) s.WithRecord(entry_.name);
  return s;
}

Result<size_t> StreamReader::Fill(size_t want) {
  const size_t have = end_ - begin_;
  if (have >= want) return have;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, have);
    begin_ = 0;
    end_ = have;
  }
  if (buf_.size() < std::max(want, kChunk)) buf_.resize(std::max(want, kChunk));
  while (end_ < want) {
    ZF_ASSIGN_OR_RETURN(size_t got, src_->Read(std::span(buf_).subspan(end_)));
    if (got == 0) break;
    end_ += got;
  }
  return end_ - begin_;
}

void StreamReader::Consume(size_t n, bool data, std::vector<std::byte>* keep) {
  std::span<const std::byte> bytes(buf_.data() + begin_, n);
  if (data) {
    crc_ = Crc32(crc_, bytes);
    done_ += n;
    if (keep != nullptr) keep->insert(keep->end(), bytes.begin(), bytes.end());
  }
  begin_ += n;
}

Result<const StreamEntry*> StreamReader::NextImpl() {
  ZF_TRY(FinishEntryImpl());
  if (state_ != State::kBetween) return static_cast<const StreamEntry*>(nullptr);
  const uint64_t at = position();
  ZF_ASSIGN_OR_RETURN(size_t avail, Fill(kSignatureSize));
  if (avail < kSignatureSize) {
    return Corrupt("stream ends " + std::string(avail == 0 ? "" : "inside a record signature ") +
                       "before the central directory",
                   at);
  }
  const uint32_t signature = io::DecodeU32le(buf_.data() + begin_);
  switch (signature) {
    case kLocalFileHeaderSignature:
      ZF_TRY(ReadLocalHeader());
      return static_cast<const StreamEntry*>(&entry_);
    case kCentralFileHeaderSignature:
    case kZip64EndOfCentralDirSignature:
    case kEndOfCentralDirSignature:
      state_ = State::kAtCentralDirectory;
      return static_cast<const StreamEntry*>(nullptr);
    default:
      return Corrupt("expected a local header or the central directory, found signature " +
                         Hex(signature, 8),
                     at);
  }
}

Status StreamReader::ReadLocalHeader() {
  const uint64_t at = position();
  ZF_ASSIGN_OR_RETURN(size_t avail, Fill(kLocalFileHeaderSize));
  if (avail < kLocalFileHeaderSize) {
    return Corrupt("stream ends inside a local header (" + std::to_string(avail) + " of " +
                       std::to_string(kLocalFileHeaderSize) + " bytes)",
                   at);
  }
  ZF_ASSIGN_OR_RETURN(LocalHeader h,
                      DecodeLocalHeader(std::span(buf_).subspan(begin_, kLocalFileHeaderSize), at));
  const size_t total = static_cast<size_t>(h.total_size());
  ZF_ASSIGN_OR_RETURN(avail, Fill(total));
  if (avail < total) {
    return Corrupt("stream ends inside a local header's name or extra field (" + std::to_string(avail) +
                       " of " + std::to_string(total) + " bytes)",
                   at);
  }
  const std::byte* p = buf_.data() + begin_;
  entry_ = StreamEntry{};
  entry_.name.assign(reinterpret_cast<const char*>(p + kLocalFileHeaderSize), h.name_length);
  entry_.header_offset = at;
  entry_.data_offset = at + total;
  entry_.flags = h.flags;
  entry_.method = h.method;
  state_ = State::kInEntry;  // errors from here name the entry
  done_ = 0;
  crc_ = 0;
  feed_.reset();
  inflater_.reset();

  ZF_TRY(CheckEntryName(entry_.name).WithOffset(at + kLocalFileHeaderSize).WithRecord(entry_.name));
  ZF_TRY(CheckLocalFlagsAndMethod(h).WithRecord(entry_.name));
  if (seen_.size() >= options_.max_entries) {
    return Status::Limit("more than " + std::to_string(options_.max_entries) +
                         " entries (ReadOptions::max_entries)")
        .WithOffset(at)
        .WithRecord(entry_.name);
  }
  if (names_.count(entry_.name) != 0) return Corrupt("duplicate entry name", at);
  const uint64_t extra_offset = at + kLocalFileHeaderSize + h.name_length;
  Result<ExtraField> ef =
      ParseExtraField(std::span(buf_).subspan(begin_ + kLocalFileHeaderSize + h.name_length, h.extra_length),
                      extra_offset);
  if (!ef.ok()) return std::move(ef).status().WithRecord(entry_.name);
  zip64_local_ = ef->has_zip64;
  entry_.has_descriptor = (h.flags & kFlagDataDescriptor) != 0;

  uint64_t uncompressed = h.uncompressed_size;
  uint64_t compressed = h.compressed_size;
  const bool marked = uncompressed == kZip64Marker32 || compressed == kZip64Marker32;
  if (marked && !ef->has_zip64) {
    return Corrupt("a local header size holds the zip64 marker, but there is no zip64 extra field",
                   at + kLocalCompressedSizeOffset);
  }
  // APPNOTE 4.5.3: the marked sizes, uncompressed first.
  if (uncompressed == kZip64Marker32) {
    Result<uint64_t> v = ReadZip64Value(ef->zip64, "the uncompressed size");
    if (!v.ok()) return std::move(v).status().WithRecord(entry_.name);
    uncompressed = *v;
  }
  if (compressed == kZip64Marker32) {
    Result<uint64_t> v = ReadZip64Value(ef->zip64, "the compressed size");
    if (!v.ok()) return std::move(v).status().WithRecord(entry_.name);
    compressed = *v;
  }
  if (h.method == kMethodStored && compressed != uncompressed) {
    return Corrupt("stored entry's local header has compressed size " + std::to_string(compressed) +
                       " but uncompressed size " + std::to_string(uncompressed),
                   at + kLocalCompressedSizeOffset);
  }
  // Without a descriptor the header states size and CRC-32. With one, torch
  // and most streaming writers leave them zero; some writers fill them in,
  // and the descriptor must then agree.
  stated_compressed_ = compressed;
  if (!entry_.has_descriptor) {
    entry_.size_known = true;
    entry_.size = uncompressed;
    entry_.crc32 = h.crc32;
  } else if (uncompressed != 0) {
    entry_.size_known = true;
    entry_.size = uncompressed;
  }
  names_.insert(entry_.name);
  Consume(total, /*data=*/false, nullptr);
  return Status::OK();
}

Status StreamReader::DeclareSize(uint64_t size) {
  if (!failed_.ok()) return failed_;
  if (state_ != State::kInEntry) return Status::InvalidArgument("DeclareSize without a current entry");
  if (entry_.size_known) {
    if (entry_.size == size) return Status::OK();
    return Remember(Corrupt("the local header states " + std::to_string(entry_.size) + " bytes, but " +
                                std::to_string(size) + " were expected",
                            entry_.header_offset));
  }
  if (done_ != 0) return Status::InvalidArgument("DeclareSize after data was read").WithRecord(entry_.name);
  entry_.size_known = true;
  entry_.size = size;
  return Status::OK();
}

Result<size_t> StreamReader::ReadImpl(std::span<std::byte> dst) {
  if (state_ != State::kInEntry) return Status::InvalidArgument("Read without a current entry");
  if (!entry_.size_known) {
    return Status::InvalidArgument("entry size unknown: call DeclareSize or ReadAll").WithRecord(entry_.name);
  }
  const uint64_t remaining = entry_.size - done_;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(dst.size(), remaining));
  if (want == 0) return size_t{0};
  if (entry_.method == kMethodDeflated) return ReadInflated(dst.first(want));
  if (end_ == begin_ && want >= kChunk) {
    // Large reads bypass the buffer.
    ZF_ASSIGN_OR_RETURN(size_t got, src_->Read(dst.first(want)));
    if (got == 0) {
      return Corrupt("stream ends inside entry data (" + std::to_string(done_) + " of " +
                         std::to_string(entry_.size) + " bytes)",
                     position());
    }
    crc_ = Crc32(crc_, dst.first(got));
    done_ += got;
    return got;
  }
  ZF_ASSIGN_OR_RETURN(size_t avail, Fill(1));
  if (avail == 0) {
    return Corrupt("stream ends inside entry data (" + std::to_string(done_) + " of " +
                       std::to_string(entry_.size) + " bytes)",
                   position());
  }
  const size_t n = std::min(want, avail);
  std::memcpy(dst.data(), buf_.data() + begin_, n);
  Consume(n, /*data=*/true, nullptr);
  return n;
}

Result<std::vector<std::byte>> StreamReader::ReadAllImpl(uint64_t max_bytes) {
  if (state_ != State::kInEntry) return Status::InvalidArgument("ReadAll without a current entry");
  std::vector<std::byte> out;
  if (entry_.method == kMethodDeflated && !entry_.size_known) {
    // The stream's end delimits the data; max_bytes bounds it.
    if (done_ != 0) return Status::Internal("data consumed from an entry of unknown size");
    StartInflate(InflateBound{max_bytes, false});
    while (true) {
      const size_t filled = out.size();
      out.resize(filled + kChunk);
      ZF_ASSIGN_OR_RETURN(size_t got, ReadInflated(std::span(out).subspan(filled)));
      out.resize(filled + got);
      if (got == 0) break;
    }
    ZF_TRY(FinishEntryImpl());
    return out;
  }
  if (!entry_.size_known) {
    if (done_ != 0) return Status::Internal("data consumed from an entry of unknown size");
    ZF_TRY(ScanForDescriptor(&out, max_bytes));
    return out;
  }
  if (entry_.size > max_bytes || !std::in_range<size_t>(entry_.size)) {
    return Status::Limit("entry of " + std::to_string(entry_.size) + " bytes is larger than the limit of " +
                         std::to_string(max_bytes) + " for reading it whole")
        .WithOffset(entry_.data_offset)
        .WithRecord(entry_.name);
  }
  out.resize(static_cast<size_t>(entry_.size - done_));
  size_t filled = 0;
  while (filled < out.size()) {
    ZF_ASSIGN_OR_RETURN(size_t got, ReadImpl(std::span(out).subspan(filled)));
    filled += got;  // Read never returns 0 before the end: it fails instead
  }
  ZF_TRY(FinishEntryImpl());
  return out;
}

// Data runs until a data descriptor whose CRC-32 and sizes match the bytes
// before it. Each candidate signature that does not match is data.
Status StreamReader::ScanForDescriptor(std::vector<std::byte>* keep, uint64_t max_keep) {
  const size_t desc = DescriptorSize(zip64_local_);
  auto take_data = [&](size_t n) -> Status {
    if (keep != nullptr && n > max_keep - std::min<uint64_t>(max_keep, done_)) {
      return Status::Limit("no data descriptor within the first " + std::to_string(max_keep) +
                           " bytes of an entry of unknown size (the limit for reading it whole)")
          .WithOffset(entry_.data_offset)
          .WithRecord(entry_.name);
    }
    Consume(n, /*data=*/true, keep);
    return Status::OK();
  };
  while (true) {
    ZF_ASSIGN_OR_RETURN(size_t avail, Fill(desc));
    const std::byte* p = buf_.data() + begin_;
    size_t candidate = avail;
    for (size_t i = 0; i + kSignatureSize <= avail; ++i) {
      const void* hit = std::memchr(p + i, 'P', avail - (kSignatureSize - 1) - i);
      if (hit == nullptr) break;
      i = static_cast<size_t>(static_cast<const std::byte*>(hit) - p);
      if (io::DecodeU32le(p + i) == kDataDescriptorSignature) {
        candidate = i;
        break;
      }
    }
    if (candidate == avail) {
      if (avail < desc) {
        return Corrupt("stream ends before a data descriptor matching the " + std::to_string(done_ + avail) +
                           " bytes of the entry",
                       position() + avail);
      }
      ZF_TRY(take_data(avail - (kSignatureSize - 1)));  // the last bytes may begin a signature
      continue;
    }
    ZF_TRY(take_data(candidate));
    ZF_ASSIGN_OR_RETURN(avail, Fill(desc));
    if (avail < desc) {
      return Corrupt("stream ends inside a data descriptor candidate (" + std::to_string(avail) + " of " +
                         std::to_string(desc) + " bytes)",
                     position());
    }
    const Descriptor d = DecodeDescriptor(buf_.data() + begin_ + kSignatureSize, zip64_local_);
    const uint32_t crc = d.crc32;
    const uint64_t compressed = d.compressed_size;
    const uint64_t uncompressed = d.uncompressed_size;
    // A descriptor CRC-32 of 0 is not recorded (CrcRecorded): the sizes
    // alone find it.
    const bool crc_matches = !CrcRecorded(crc) || crc == crc_;
    if (compressed == done_ && uncompressed == done_ && !crc_matches) {
      // The sizes match the data so far: this is the descriptor, and the
      // data does not match its CRC-32.
      return Corrupt("CRC-32 of the data is " + Hex(crc_, 8) + ", the data descriptor says " + Hex(crc, 8),
                     entry_.data_offset);
    }
    if (crc_matches && compressed == done_ && uncompressed == done_) {
      Consume(desc, /*data=*/false, nullptr);
      entry_.size_known = true;
      entry_.size = done_;
      seen_.push_back(Seen{entry_.name, entry_.header_offset, entry_.method, entry_.size, entry_.size, crc_});
      state_ = State::kBetween;
      return Status::OK();
    }
    ZF_TRY(take_data(1));
  }
}

Status StreamReader::CheckDescriptor(uint64_t compressed_size) {
  if (!entry_.has_descriptor) {
    if (CrcRecorded(entry_.crc32) && crc_ != entry_.crc32) {
      return Corrupt("CRC-32 of the data is " + Hex(crc_, 8) + ", the local header says " +
                         Hex(entry_.crc32, 8),
                     entry_.data_offset);
    }
    return Status::OK();
  }
  const uint64_t at = position();
  ZF_ASSIGN_OR_RETURN(size_t avail, Fill(DescriptorSize(zip64_local_)));
  // APPNOTE 4.3.9.3: the signature is optional; torch writes it.
  const bool signed_form =
      avail >= kSignatureSize && io::DecodeU32le(buf_.data() + begin_) == kDataDescriptorSignature;
  const size_t need = DescriptorSize(zip64_local_) - (signed_form ? 0 : kSignatureSize);
  if (avail < need) {
    return Corrupt("stream ends inside the data descriptor (" + std::to_string(avail) + " of " +
                       std::to_string(need) + " bytes)",
                   at);
  }
  const Descriptor d = DecodeDescriptor(buf_.data() + begin_ + (signed_form ? kSignatureSize : 0), zip64_local_);
  const uint32_t crc = d.crc32;
  const uint64_t compressed = d.compressed_size;
  const uint64_t uncompressed = d.uncompressed_size;
  if (compressed != compressed_size || uncompressed != entry_.size) {
    return Corrupt("data descriptor states sizes " + std::to_string(compressed) + " and " +
                       std::to_string(uncompressed) + ", but the entry has " + std::to_string(compressed_size) +
                       " and " + std::to_string(entry_.size) + " bytes",
                   at);
  }
  if (CrcRecorded(crc) && crc != crc_) {
    return Corrupt("CRC-32 of the data is " + Hex(crc_, 8) + ", the data descriptor says " + Hex(crc, 8),
                   entry_.data_offset);
  }
  Consume(need, /*data=*/false, nullptr);
  return Status::OK();
}

Status StreamReader::FinishEntryImpl() {
  if (state_ != State::kInEntry) return Status::OK();
  if (entry_.method == kMethodDeflated) return FinishInflated();
  if (!entry_.size_known) return ScanForDescriptor(nullptr, 0);
  while (done_ < entry_.size) {
    ZF_ASSIGN_OR_RETURN(size_t avail, Fill(1));
    if (avail == 0) {
      return Corrupt("stream ends inside entry data (" + std::to_string(done_) + " of " +
                         std::to_string(entry_.size) + " bytes)",
                     position());
    }
    Consume(static_cast<size_t>(std::min<uint64_t>(avail, entry_.size - done_)), /*data=*/true, nullptr);
  }
  ZF_TRY(CheckDescriptor(entry_.size));
  seen_.push_back(Seen{entry_.name, entry_.header_offset, entry_.method, entry_.size, entry_.size, crc_});
  state_ = State::kBetween;
  return Status::OK();
}

Result<std::span<const std::byte>> StreamReader::NextCompressed() {
  ZF_ASSIGN_OR_RETURN(size_t avail, Fill(1));
  std::span<const std::byte> bytes(buf_.data() + begin_, avail);
  begin_ = end_;
  return bytes;
}

void StreamReader::StartInflate(InflateBound bound) {
  feed_ = std::make_unique<Feed>(this);
  inflater_ = std::make_unique<Inflater>(feed_.get(), entry_.data_offset, bound);
}

// Inflates into dst; the declared (or stated) size bounds the output
// exactly, else ReadAll's limit does.
Result<size_t> StreamReader::ReadInflated(std::span<std::byte> dst) {
  if (!inflater_) StartInflate(InflateBound{entry_.size, true});
  Result<size_t> got = inflater_->Read(dst);
  if (!got.ok()) return Status(got.status()).WithRecord(entry_.name);
  crc_ = Crc32(crc_, dst.first(*got));
  done_ += *got;
  return got;
}

// Inflates the rest of the entry, gives back the bytes the inflater took
// past the stream's end, and checks the sizes and CRC-32.
Status StreamReader::FinishInflated() {
  // Skipped unread: no bound but the stream's own end; the bytes go nowhere.
  if (!inflater_ && !entry_.size_known) StartInflate(InflateBound{std::numeric_limits<uint64_t>::max(), false});
  std::vector<std::byte> scratch(kChunk);
  while (true) {
    ZF_ASSIGN_OR_RETURN(size_t got, ReadInflated(scratch));
    if (got == 0) break;
  }
  const std::vector<std::byte> leftover = inflater_->Leftover();
  const uint64_t compressed = inflater_->input_bytes();
  inflater_.reset();
  feed_.reset();
  // The bytes after the stream (the data descriptor, the next header) are
  // read on from the buffer.
  if (begin_ >= leftover.size()) {
    begin_ -= leftover.size();
    if (!leftover.empty()) std::memcpy(buf_.data() + begin_, leftover.data(), leftover.size());
  } else {
    std::vector<std::byte> rest(leftover);
    rest.insert(rest.end(), buf_.begin() + static_cast<std::ptrdiff_t>(begin_),
                buf_.begin() + static_cast<std::ptrdiff_t>(end_));
    if (buf_.size() < rest.size()) buf_.resize(rest.size());
    std::memcpy(buf_.data(), rest.data(), rest.size());
    begin_ = 0;
    end_ = rest.size();
  }
  entry_.size_known = true;
  entry_.size = done_;
  if (!entry_.has_descriptor && compressed != stated_compressed_)
    return Corrupt("the deflate stream spans " + std::to_string(compressed) + " bytes, the local header states " +
                       std::to_string(stated_compressed_),
                   entry_.data_offset + compressed);
  ZF_TRY(CheckDescriptor(compressed));
  seen_.push_back(Seen{entry_.name, entry_.header_offset, entry_.method, entry_.size, compressed, crc_});
  state_ = State::kBetween;
  return Status::OK();
}

Status StreamReader::FinishImpl() {
  if (state_ != State::kAtCentralDirectory) {
    return Status::InvalidArgument("Finish before Next reached the central directory, or twice");
  }
  const uint64_t base = position();
  // The central directory, the end records and the longest comment.
  const uint64_t max_tail = options_.max_central_directory_bytes + kZip64EndOfCentralDirSize +
                            kZip64EndOfCentralDirLocatorSize + kEndOfCentralDirSize + kMaxCommentSize;
  std::vector<std::byte> tail(buf_.begin() + static_cast<std::ptrdiff_t>(begin_),
                              buf_.begin() + static_cast<std::ptrdiff_t>(end_));
  begin_ = end_ = 0;
  while (true) {
    if (tail.size() > max_tail) {
      return Status::Limit("more than " + std::to_string(max_tail) +
                           " bytes after the last entry (ReadOptions::max_central_directory_bytes)")
          .WithOffset(base);
    }
    const size_t old = tail.size();
    tail.resize(old + kChunk);
    ZF_ASSIGN_OR_RETURN(size_t got, src_->Read(std::span(tail).subspan(old)));
    tail.resize(old + got);
    if (got == 0) break;
  }
  const TailSource rest(base, tail, src_->name());
  ZF_ASSIGN_OR_RETURN(EndRecords end, ReadEndRecords(rest));
  if (end.cd_offset != base) {
    return Status::Corrupt("the end records place the central directory at " + std::to_string(end.cd_offset) +
                           ", but the entries end at " + std::to_string(base))
        .WithOffset(end.end_records_offset);
  }
  if (end.entries != seen_.size()) {
    return Status::Corrupt("the central directory lists " + std::to_string(end.entries) + " entries, the stream had " +
                           std::to_string(seen_.size()))
        .WithOffset(end.end_records_offset);
  }
  if (end.cd_size > options_.max_central_directory_bytes) {
    return Status::Limit("central directory of " + std::to_string(end.cd_size) +
                         " bytes exceeds the limit of " + std::to_string(options_.max_central_directory_bytes) +
                         " (ReadOptions::max_central_directory_bytes)")
        .WithOffset(end.cd_offset);
  }
  ZF_ASSIGN_OR_RETURN(std::vector<CentralEntry> central,
                      ParseCentralDirectory(std::span(tail).first(static_cast<size_t>(end.cd_size)), base,
                                            end.entries));
  // What ReadArchive refuses as ambiguous from the central directory alone
  // (zip/central_directory.h), refused from a pipe too.
  ZF_TRY(CheckNameParity(central));
  for (size_t i = 0; i < central.size(); ++i) {
    const CentralEntry& c = central[i];
    const Seen& s = seen_[i];
    ZF_TRY(CheckDirectoryEntry(c));
    std::string what;
    if (c.name != s.name) {
      what = "names " + Quote(c.name) + " where the stream had " + Quote(s.name);
    } else if (c.header_offset != s.header_offset) {
      what = "places the entry at " + std::to_string(c.header_offset) + ", the stream at " +
             std::to_string(s.header_offset);
    } else if (c.method != s.method) {
      what = "gives compression method " + DescribeMethod(c.method) + ", the local header " +
             DescribeMethod(s.method);
    } else if (c.size != s.size || c.compressed_size != s.compressed_size) {
      what = "gives " + std::to_string(c.compressed_size) + " and " + std::to_string(c.size) +
             " bytes (compressed and not), the stream had " + std::to_string(s.compressed_size) + " and " +
             std::to_string(s.size);
    } else if (CrcRecorded(c.crc32) && c.crc32 != s.crc32) {
      what = "gives CRC-32 " + Hex(c.crc32, 8) + ", the stream's data has " + Hex(s.crc32, 8);
    }
    if (!what.empty()) {
      return Status::Corrupt("central directory entry " + std::to_string(i) + " " + what)
          .WithOffset(c.offset)
          .WithRecord(s.name);
    }
  }
  state_ = State::kFinished;
  return Status::OK();
}

}  // namespace zerofold::zip
