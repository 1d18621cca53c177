#include "zip/writer.h"

#include <string>

#include "zip/crc32.h"
#include "zip/entry_name.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

// The central directory goes to the sink in pieces of about this size.
constexpr size_t kCentralChunk = 1 << 16;

}  // namespace

Writer::Writer(Sink* sink) : sink_(sink) {}

Status Writer::Fail(Status status) {
  if (failed_.ok()) failed_ = status;
  return status;
}

Status Writer::Append(std::span<const std::byte> data) {
  Status s = sink_->Append(data);
  if (!s.ok()) return Fail(std::move(s.WithPath(sink_->name())));
  offset_ += data.size();
  return Status::OK();
}

Status Writer::BeginEntry(std::string_view name) {
  // Laid out as a non-empty entry below 4 GiB; the real size goes into the
  // descriptor and the central directory.
  EntryLayout layout = LayOutEntry(offset_, name.size(), 1);
  layout.size = 0;
  return Begin(name, layout, /*declared=*/false);
}

Status Writer::BeginEntry(std::string_view name, uint64_t size) {
  return Begin(name, LayOutEntry(offset_, name.size(), size), /*declared=*/true);
}

Status Writer::Begin(std::string_view name, EntryLayout layout, bool declared) {
  if (!failed_.ok()) return failed_;
  if (open_) return Status::InvalidArgument("zip writer: BeginEntry while an entry is open").WithRecord(name);
  if (finished_) return Status::InvalidArgument("zip writer: BeginEntry after Finish").WithRecord(name);
  if (name.size() > kZip64Marker16) {
    return Status::InvalidArgument("entry name of " + std::to_string(name.size()) +
                                   " bytes is longer than zip allows (65535)");
  }
  Status name_ok = CheckEntryName(name);
  if (!name_ok.ok()) return Status::InvalidArgument(name_ok.message()).WithRecord(name);
  if (name.back() == '/') return Status::InvalidArgument("zip writer writes no folder entries").WithRecord(name);
  if (names_.count(std::string(name)) != 0) {
    return Status::InvalidArgument("entry name written twice").WithRecord(name);
  }
  current_ = Written{std::string(name), layout, 0};
  declared_ = declared;
  written_ = 0;
  scratch_.clear();
  AppendLocalHeader(layout, name, &scratch_);
  ZF_TRY(Append(scratch_));
  names_.insert(current_.name);
  open_ = true;
  return Status::OK();
}

Status Writer::Write(std::span<const std::byte> data) {
  if (!failed_.ok()) return failed_;
  if (!open_) return Status::InvalidArgument("zip writer: Write without an open entry");
  const uint64_t limit = declared_ ? current_.layout.size : uint64_t{kZip64Marker32} - 1;
  if (data.size() > limit - written_) {
    return Fail(Status::InvalidArgument(
                    declared_ ? "entry grows past its declared " + std::to_string(limit) + " bytes"
                              : "entry without a declared size grows past " + std::to_string(limit) +
                                    " bytes; declare its size in BeginEntry")
                    .WithRecord(current_.name));
  }
  current_.crc32 = Crc32(current_.crc32, data);
  written_ += data.size();
  return Append(data);
}

Status Writer::EndEntry() {
  if (!failed_.ok()) return failed_;
  if (!open_) return Status::InvalidArgument("zip writer: EndEntry without an open entry");
  if (declared_ && written_ != current_.layout.size) {
    return Fail(Status::InvalidArgument("entry declared " + std::to_string(current_.layout.size) +
                                        " bytes but " + std::to_string(written_) + " were written")
                    .WithRecord(current_.name));
  }
  current_.layout.size = written_;
  scratch_.clear();
  AppendDataDescriptor(current_.layout, current_.crc32, &scratch_);
  ZF_TRY(Append(scratch_));
  done_.push_back(std::move(current_));
  current_ = Written{};
  open_ = false;
  return Status::OK();
}

Status Writer::AddEntry(std::string_view name, std::span<const std::byte> data) {
  ZF_TRY(BeginEntry(name, data.size()));
  ZF_TRY(Write(data));
  return EndEntry();
}

Status Writer::Finish() {
  if (!failed_.ok()) return failed_;
  if (open_) return Status::InvalidArgument("zip writer: Finish while an entry is open").WithRecord(current_.name);
  if (finished_) return Status::InvalidArgument("zip writer: Finish called twice");
  const uint64_t cd_offset = offset_;
  scratch_.clear();
  for (const Written& w : done_) {
    AppendCentralHeader(w.layout, w.name, w.crc32, &scratch_);
    if (scratch_.size() >= kCentralChunk) {
      ZF_TRY(Append(scratch_));
      scratch_.clear();
    }
  }
  ZF_TRY(Append(scratch_));
  scratch_.clear();
  AppendEndRecords(done_.size(), cd_offset, offset_ - cd_offset, offset_, &scratch_);
  ZF_TRY(Append(scratch_));
  scratch_ = {};
  finished_ = true;
  return Status::OK();
}

uint64_t Writer::ArchiveSize(std::span<const std::pair<std::string, uint64_t>> entries) {
  uint64_t offset = 0;
  uint64_t cd_size = 0;
  for (const auto& [name, size] : entries) {
    const EntryLayout l = LayOutEntry(offset, name.size(), size);
    offset = l.end_offset();
    cd_size += l.central_header_size();
  }
  return offset + cd_size + kTorchEndRecordsSize;
}

}  // namespace zerofold::zip
