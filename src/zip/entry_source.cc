#include "zip/entry_source.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "zip/crc32.h"
#include "zip/describe.h"
#include "zip/format.h"
#include "zip/inflate.h"

namespace zerofold::zip {
namespace {

// Compressed bytes read from the archive per call.
constexpr size_t kInputChunk = 1 << 16;

class StoredEntrySource final : public EntrySource {
 public:
  StoredEntrySource(const RandomSource& archive, const Entry& entry)
      : archive_(archive), entry_(entry), crc_(entry) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= entry_.size) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), entry_.size - offset));
    // The entry lies inside the archive: a short read is a truncated file,
    // reported at its absolute offset.
    Status read = ReadExactAt(archive_, entry_.data_offset + offset, dst.first(n));
    if (!read.ok()) return read.WithRecord(entry_.name);
    std::lock_guard<std::mutex> lock(mu_);
    ZF_TRY(crc_.See(offset, dst.first(n)));
    return n;
  }
  uint64_t size() const override { return entry_.size; }
  const std::string& name() const override { return archive_.name(); }
  Status Finish() override { return Status::OK(); }

 private:
  const RandomSource& archive_;
  const Entry entry_;
  mutable std::mutex mu_;
  mutable StreamedCrc crc_;
};

// The compressed bytes of a deflated entry, read from the archive.
class ArchiveInput final : public InflateInput {
 public:
  ArchiveInput(const RandomSource& archive, const Entry& entry) : archive_(archive), entry_(entry) {}
  Result<std::span<const std::byte>> Next() override {
    const uint64_t left = entry_.compressed_size - done_;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kInputChunk));
    if (n == 0) return std::span<const std::byte>();
    buf_.resize(kInputChunk);
    std::span<std::byte> dst(buf_.data(), n);
    ZF_TRY(ReadExactAt(archive_, entry_.data_offset + done_, dst));
    done_ += n;
    return std::span<const std::byte>(dst);
  }

 private:
  const RandomSource& archive_;
  const Entry& entry_;
  std::vector<std::byte> buf_;
  uint64_t done_ = 0;
};

class DeflatedEntrySource final : public EntrySource {
 public:
  DeflatedEntrySource(const RandomSource& archive, const Entry& entry) : archive_(archive), entry_(entry) {}

  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (offset >= entry_.size) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), entry_.size - offset));
    if (Status s = Seek(offset); !s.ok()) return s.WithRecord(entry_.name);
    if (Status s = Fill(dst.first(n)); !s.ok()) return s.WithRecord(entry_.name);
    return n;
  }
  uint64_t size() const override { return entry_.size; }
  const std::string& name() const override { return archive_.name(); }

  Status Finish() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (checked_) return Status::OK();
    return Seek(entry_.size).WithRecord(entry_.name);
  }

 private:
  // Moves to uncompressed `offset`, restarting when it lies behind.
  Status Seek(uint64_t offset) const {
    if (!inflater_ || offset < pos_) {
      input_ = std::make_unique<ArchiveInput>(archive_, entry_);
      inflater_ = std::make_unique<Inflater>(input_.get(), entry_.data_offset, InflateBound{entry_.size, true});
      pos_ = 0;
      crc_ = 0;
      checked_ = false;
    }
    std::vector<std::byte> scratch;
    while (pos_ < offset) {
      scratch.resize(static_cast<size_t>(std::min<uint64_t>(offset - pos_, kInputChunk)));
      ZF_TRY(Fill(scratch));
    }
    if (pos_ == entry_.size) ZF_TRY(CheckEnd());
    return Status::OK();
  }

  // Fills dst from the current position.
  Status Fill(std::span<std::byte> dst) const {
    size_t filled = 0;
    while (filled < dst.size()) {
      ZF_ASSIGN_OR_RETURN(size_t got, inflater_->Read(dst.subspan(filled)));
      if (got == 0) return Status::Internal("inflate ended before the declared size");  // the bound fails first
      filled += got;
    }
    crc_ = Crc32(crc_, dst);
    pos_ += dst.size();
    if (pos_ == entry_.size) ZF_TRY(CheckEnd());
    return Status::OK();
  }

  // At the declared size: the stream must end there, span exactly the
  // compressed size, and match the CRC-32.
  Status CheckEnd() const {
    if (checked_) return Status::OK();
    std::byte probe[1];
    ZF_ASSIGN_OR_RETURN(size_t more, inflater_->Read(probe));
    if (more != 0) return Status::Internal("inflate produced past the declared size");  // the bound fails first
    if (inflater_->input_bytes() != entry_.compressed_size)
      return Status::Corrupt("the deflate stream ends after " + std::to_string(inflater_->input_bytes()) +
                             " of the entry's " + std::to_string(entry_.compressed_size) + " compressed bytes")
          .WithOffset(entry_.data_offset + inflater_->input_bytes());
    if (CrcRecorded(entry_.crc32) && crc_ != entry_.crc32)
      return Status::Corrupt("CRC-32 of the inflated data is " + Hex(crc_, 8) + ", the central directory says " +
                             Hex(entry_.crc32, 8))
          .WithOffset(entry_.data_offset);
    checked_ = true;
    return Status::OK();
  }

  const RandomSource& archive_;
  const Entry entry_;
  mutable std::mutex mu_;
  mutable std::unique_ptr<ArchiveInput> input_;
  mutable std::unique_ptr<Inflater> inflater_;
  mutable uint64_t pos_ = 0;
  mutable uint32_t crc_ = 0;
  mutable bool checked_ = false;
};

}  // namespace

StreamedCrc::StreamedCrc(const Entry& entry)
    : name_(entry.name), data_offset_(entry.data_offset), size_(entry.size), expected_(entry.crc32) {}

Status StreamedCrc::See(uint64_t pos, std::span<const std::byte> bytes) {
  if (!CrcRecorded(expected_) || bytes.empty()) return Status::OK();
  if (pos == 0 && skipped_) {  // a new pass
    next_ = 0;
    crc_ = 0;
    skipped_ = false;
  }
  if (skipped_ || checked_) return Status::OK();
  if (pos > next_) {
    skipped_ = true;
    return Status::OK();
  }
  const uint64_t end = pos + bytes.size();
  if (end <= next_) return Status::OK();
  crc_ = Crc32(crc_, bytes.subspan(static_cast<size_t>(next_ - pos)));
  next_ = end;
  if (next_ < size_) return Status::OK();
  if (crc_ != expected_) {
    skipped_ = true;  // report once per pass
    return Status::Corrupt("CRC-32 of the record's " + std::to_string(size_) + " bytes is " + Hex(crc_, 8) +
                           ", the central directory says " + Hex(expected_, 8))
        .WithOffset(data_offset_)
        .WithRecord(name_);
  }
  checked_ = true;
  return Status::OK();
}

StreamedCrcs::StreamedCrcs(const std::vector<Entry>& entries) {
  for (const Entry& e : entries) {
    if (e.deflated() || !CrcRecorded(e.crc32) || e.size == 0) continue;
    records_.push_back(Record{e.data_offset, e.data_offset + e.size, StreamedCrc(e)});
  }
  std::sort(records_.begin(), records_.end(), [](const Record& a, const Record& b) { return a.begin < b.begin; });
}

Status StreamedCrcs::See(uint64_t file_pos, std::span<const std::byte> bytes) {
  const uint64_t end = file_pos + bytes.size();
  while (first_ < records_.size() && records_[first_].end <= file_pos) ++first_;
  for (size_t i = first_; i < records_.size() && records_[i].begin < end; ++i) {
    Record& r = records_[i];
    const uint64_t from = std::max(file_pos, r.begin), to = std::min(end, r.end);
    if (from >= to) continue;
    ZF_TRY(r.crc.See(from - r.begin, bytes.subspan(static_cast<size_t>(from - file_pos),
                                                   static_cast<size_t>(to - from))));
  }
  return Status::OK();
}

std::unique_ptr<EntrySource> OpenEntry(const RandomSource& archive, const Entry& entry) {
  if (entry.method == kMethodDeflated) return std::make_unique<DeflatedEntrySource>(archive, entry);
  return std::make_unique<StoredEntrySource>(archive, entry);
}

Result<EntrySource*> OpenEntries::Open(const RandomSource& archive, const Entry& entry) {
  if (!entry.located()) return Status::Internal("entry opened before its local header was read").WithRecord(entry.name);
  if (!entry.deflated()) {
    std::unique_ptr<EntrySource>& open = stored_[{&archive, entry.data_offset, entry.size}];
    if (open == nullptr) {
      if (stored_.size() > kOpenStored) {
        stored_.clear();
        return Open(archive, entry);
      }
      open = OpenEntry(archive, entry);
    }
    return open.get();
  }
  for (size_t i = 0; i < deflated_.size(); ++i) {
    if (deflated_[i].archive == &archive && deflated_[i].data_offset == entry.data_offset) {
      std::rotate(deflated_.begin() + static_cast<std::ptrdiff_t>(i),
                  deflated_.begin() + static_cast<std::ptrdiff_t>(i) + 1, deflated_.end());
      return deflated_.back().source.get();
    }
  }
  if (deflated_.size() == kOpen) {
    Status closed = deflated_.front().source->Finish();
    deflated_.erase(deflated_.begin());
    ZF_TRY(closed);
  }
  deflated_.push_back(Kept{&archive, entry.data_offset, OpenEntry(archive, entry)});
  return deflated_.back().source.get();
}

Status OpenEntries::Finish() {
  Status first = Status::OK();
  for (Kept& k : deflated_) {
    Status s = k.source->Finish();
    if (first.ok() && !s.ok()) first = std::move(s.WithPath(k.archive->name()));
  }
  deflated_.clear();
  stored_.clear();
  return first;
}

Result<std::vector<std::byte>> ReadEntry(const RandomSource& src, const Entry& listed,
                                         uint64_t max_bytes) {
  ZF_ASSIGN_OR_RETURN(const Entry entry, LocateEntry(src, listed));
  if (entry.size > max_bytes || !std::in_range<size_t>(entry.size)) {
    return Status::Limit("entry of " + std::to_string(entry.size) +
                         " bytes is larger than the limit of " + std::to_string(max_bytes) +
                         " for reading it whole")
        .WithOffset(entry.data_offset)
        .WithRecord(entry.name);
  }
  std::vector<std::byte> data(static_cast<size_t>(entry.size));
  std::unique_ptr<EntrySource> bytes = OpenEntry(src, entry);
  Status read = ReadExactAt(*bytes, 0, data);
  if (read.ok()) read = bytes->Finish();
  if (!read.ok()) return read.WithRecord(entry.name);
  const uint32_t crc = Crc32(0, data);
  if (CrcRecorded(entry.crc32) && crc != entry.crc32) {
    return Status::Corrupt("CRC-32 of the data is " + Hex(crc, 8) + ", the central directory says " +
                           Hex(entry.crc32, 8))
        .WithOffset(entry.data_offset)
        .WithRecord(entry.name);
  }
  return data;
}

}  // namespace zerofold::zip
