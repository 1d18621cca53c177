#include "zip/archive.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/checked_math.h"
#include "zip/central_directory.h"
#include "zip/describe.h"
#include "zip/end_records.h"
#include "zip/entry_name.h"
#include "zip/format.h"
#include "zip/local_header.h"

namespace zerofold::zip {
namespace {

// A RandomSource over caller-owned bytes, for ReadArchiveBytes.
class SpanSource final : public RandomSource {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= bytes_.size()) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(dst.size(), bytes_.size() - offset));
    if (n > 0) std::memcpy(dst.data(), bytes_.data() + offset, n);
    return n;
  }
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }

 private:
  std::span<const std::byte> bytes_;
  std::string name_ = "<memory>";
};

// Bytes read past a local header's name, so that a coalescing source
// (io/coalescing_source.h) fetching the header also holds torch's
// alignment field (at most 4 + 63 bytes) and a zip64 block (4 + 24).
constexpr uint64_t kExtraGuess = 128;

// Checks that a local header fits at c.header_offset before the central
// directory at `cd_offset`.
Status CheckHeaderOffset(const CentralEntry& c, uint64_t cd_offset) {
  if (io::RangeInside(c.header_offset, kLocalFileHeaderSize, cd_offset)) return Status::OK();
  return Status::Corrupt("local header offset " + std::to_string(c.header_offset) +
                         " leaves no room for a local header before the central directory at " +
                         std::to_string(cd_offset))
      .WithOffset(c.offset)
      .WithRecord(c.name);
}

Result<Entry> ReadLocalHeader(const RandomSource& src, const Entry& c) {
  if (!io::RangeInside(c.header_offset, kLocalFileHeaderSize, c.room_end)) {
    return Status::Corrupt("local header at " + std::to_string(c.header_offset) +
                           " does not fit before the next local header or the central directory at " +
                           std::to_string(c.room_end))
        .WithOffset(c.header_offset);
  }
  const uint64_t room = c.room_end - c.header_offset;
  std::vector<std::byte> buf(static_cast<size_t>(
      std::min<uint64_t>(room, kLocalFileHeaderSize + c.name.size() + kExtraGuess)));
  ZF_TRY(ReadExactAt(src, c.header_offset, buf));
  ZF_ASSIGN_OR_RETURN(LocalHeader h, DecodeLocalHeader(std::span(buf).first(kLocalFileHeaderSize),
                                                       c.header_offset));
  // miniz never reads the local flags (zip/central_directory.h): the central
  // directory, checked already, says the entry is not encrypted.
  if (h.flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    return Status::Ambiguous("local header flags " + Hex(h.flags, 4) +
                             " say encrypted, the central directory's do not: torch reads the bytes as they "
                             "are, a reader of the local header would decrypt them")
        .WithOffset(c.header_offset + kLocalFlagsOffset);
  }
  ZF_TRY(CheckLocalFlagsAndMethod(h));
  if (h.method != c.method) {
    return Status::Corrupt("local header gives compression method " + DescribeMethod(h.method) +
                           ", the central directory " + DescribeMethod(c.method))
        .WithOffset(c.header_offset + kLocalMethodOffset);
  }
  if (h.total_size() > room) {
    return Status::Corrupt("local header with a " + std::to_string(h.name_length) + "-byte name and " +
                           std::to_string(h.extra_length) +
                           "-byte extra field runs into the next local header or the central directory at " +
                           std::to_string(c.room_end))
        .WithOffset(c.header_offset + kLocalNameLengthOffset);
  }
  const std::string_view local_name(reinterpret_cast<const char*>(buf.data()) + kLocalFileHeaderSize,
                                    std::min<size_t>(h.name_length, buf.size() - kLocalFileHeaderSize));
  if (h.name_length != c.name.size() || local_name != c.name) {
    return Status::Ambiguous("local header names " + Quote(local_name) +
                             (local_name.size() < h.name_length ? "..." : "") + ", the central directory " +
                             Quote(c.name) +
                             ": torch finds the record by the central name, a reader of local headers by "
                             "the local one")
        .WithOffset(c.header_offset + kLocalFileHeaderSize);
  }
  Entry e = c;
  e.data_offset = c.header_offset + h.total_size();
  if (!io::RangeInside(e.data_offset, e.compressed_size, c.room_end)) {
    return Status::Corrupt("entry data (" + std::to_string(e.compressed_size) + " bytes at " +
                           std::to_string(e.data_offset) +
                           ") runs past the next local header or the central directory at " +
                           std::to_string(c.room_end))
        .WithOffset(e.data_offset);
  }
  return e;
}

// Gives each entry its room: up to the next local header in file order, or
// the central directory. Two entries at one local header offset are
// corrupt (the second in file order has no room).
Status AssignRooms(std::vector<Entry>& entries, const std::vector<CentralEntry>& central, uint64_t cd_offset) {
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return entries[a].header_offset < entries[b].header_offset;
  });
  for (size_t k = 0; k < order.size(); ++k) {
    Entry& e = entries[order[k]];
    e.room_end = k + 1 < order.size() ? entries[order[k + 1]].header_offset : cd_offset;
    if (k > 0 && entries[order[k - 1]].header_offset == e.header_offset) {
      const size_t first = std::min(order[k - 1], order[k]), second = std::max(order[k - 1], order[k]);
      return Status::Corrupt("local header offset " + std::to_string(e.header_offset) + " is entry " +
                             Quote(entries[first].name) + "'s too")
          .WithOffset(central[second].offset)
          .WithRecord(entries[second].name);
    }
  }
  return Status::OK();
}

std::string CommonTopFolder(const std::vector<Entry>& entries) {
  if (entries.empty()) return {};
  const std::string_view top = TopFolder(entries.front().name);
  if (top.empty()) return {};
  for (const Entry& e : entries) {
    if (TopFolder(e.name) != top) return {};
  }
  return std::string(top);
}

}  // namespace

Result<Archive> ReadArchive(const RandomSource& src, const ReadOptions& options) {
  ZF_ASSIGN_OR_RETURN(EndRecords end, ReadEndRecords(src));
  if (end.entries > options.max_entries) {
    return Status::Limit("central directory declares " + std::to_string(end.entries) +
                         " entries, more than the limit of " + std::to_string(options.max_entries) +
                         " (ReadOptions::max_entries)")
        .WithOffset(end.end_records_offset);
  }
  if (end.cd_size > options.max_central_directory_bytes || !std::in_range<size_t>(end.cd_size)) {
    return Status::Limit("central directory of " + std::to_string(end.cd_size) +
                         " bytes exceeds the limit of " +
                         std::to_string(options.max_central_directory_bytes) +
                         " (ReadOptions::max_central_directory_bytes)")
        .WithOffset(end.cd_offset);
  }
  if (end.entries > end.cd_size / kCentralFileHeaderSize) {
    return Status::Corrupt("end record declares " + std::to_string(end.entries) + " entries, but a " +
                           std::to_string(end.cd_size) + "-byte central directory holds at most " +
                           std::to_string(end.cd_size / kCentralFileHeaderSize))
        .WithOffset(end.end_records_offset);
  }
  std::vector<std::byte> cd(static_cast<size_t>(end.cd_size));
  ZF_TRY(ReadExactAt(src, end.cd_offset, cd));
  ZF_ASSIGN_OR_RETURN(std::vector<CentralEntry> central,
                      ParseCentralDirectory(cd, end.cd_offset, end.entries));
  cd = {};
  ZF_TRY(CheckNameParity(central));

  Archive archive;
  archive.entries.reserve(central.size());
  for (const CentralEntry& c : central) {
    ZF_TRY(CheckHeaderOffset(c, end.cd_offset));
    ZF_TRY(CheckDataFits(c, end.cd_offset));
    ZF_TRY(CheckDirectoryEntry(c));
    Entry e;
    e.name = c.name;
    e.header_offset = c.header_offset;
    e.size = c.size;
    e.crc32 = c.crc32;
    e.method = c.method;
    e.compressed_size = c.compressed_size;
    archive.entries.push_back(std::move(e));
  }
  ZF_TRY(AssignRooms(archive.entries, central, end.cd_offset));
  if (!central.empty()) ZF_TRY(CheckArchiveStart(central));
  archive.top_folder = CommonTopFolder(archive.entries);
  archive.by_name.resize(archive.entries.size());
  for (size_t i = 0; i < archive.by_name.size(); ++i) archive.by_name[i] = i;
  std::sort(archive.by_name.begin(), archive.by_name.end(), [&](size_t a, size_t b) {
    return archive.entries[a].name < archive.entries[b].name;
  });
  return archive;
}

Result<Entry> LocateEntry(const RandomSource& src, const Entry& entry) {
  if (entry.located()) return entry;
  Result<Entry> e = ReadLocalHeader(src, entry);
  if (!e.ok()) return std::move(e).status().WithRecord(entry.name);
  return e;
}

Result<Archive> ReadArchiveBytes(std::span<const std::byte> bytes, const ReadOptions& options) {
  return ReadArchive(SpanSource(bytes), options);
}

bool Entry::deflated() const { return method == kMethodDeflated; }

const Entry* Archive::FindFullName(std::string_view name) const {
  if (by_name.size() == entries.size()) {
    auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                               [&](size_t i, std::string_view n) { return entries[i].name < n; });
    if (it != by_name.end() && entries[*it].name == name) return &entries[*it];
    return nullptr;
  }
  for (const Entry& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const Entry* Archive::Find(std::string_view relative) const {
  if (top_folder.empty()) return FindFullName(relative);
  std::string full;
  full.reserve(top_folder.size() + 1 + relative.size());
  full.append(top_folder).append("/").append(relative);
  return FindFullName(full);
}

}  // namespace zerofold::zip
