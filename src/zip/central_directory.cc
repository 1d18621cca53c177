#include "zip/central_directory.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "zip/describe.h"
#include "zip/entry_name.h"
#include "zip/extra_field.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

// The fixed part of a central header, fields in spec order.
struct CentralHeader {
  uint32_t signature;
  uint16_t version_made_by, version_needed, flags, method, time, date;
  uint32_t crc32, compressed_size, uncompressed_size;
  uint16_t name_length, extra_length, comment_length, disk_start, internal_attributes;
  uint32_t external_attributes, header_offset;
};

CentralHeader DecodeCentralHeader(const std::byte* p) {  // unchecked: 46 bytes
  CentralHeader h;
  h.signature = io::DecodeU32le(p);
  h.version_made_by = io::DecodeU16le(p + kCentralVersionMadeByOffset);
  h.version_needed = io::DecodeU16le(p + kCentralVersionNeededOffset);
  h.flags = io::DecodeU16le(p + kCentralFlagsOffset);
  h.method = io::DecodeU16le(p + kCentralMethodOffset);
  h.time = io::DecodeU16le(p + kCentralTimeOffset);
  h.date = io::DecodeU16le(p + kCentralDateOffset);
  h.crc32 = io::DecodeU32le(p + kCentralCrcOffset);
  h.compressed_size = io::DecodeU32le(p + kCentralCompressedSizeOffset);
  h.uncompressed_size = io::DecodeU32le(p + kCentralUncompressedSizeOffset);
  h.name_length = io::DecodeU16le(p + kCentralNameLengthOffset);
  h.extra_length = io::DecodeU16le(p + kCentralExtraLengthOffset);
  h.comment_length = io::DecodeU16le(p + kCentralCommentLengthOffset);
  h.disk_start = io::DecodeU16le(p + kCentralDiskStartOffset);
  h.internal_attributes = io::DecodeU16le(p + kCentralInternalAttributesOffset);
  h.external_attributes = io::DecodeU32le(p + kCentralExternalAttributesOffset);
  h.header_offset = io::DecodeU32le(p + kCentralLocalHeaderOffsetOffset);
  return h;
}

// Checks the fixed header of entry `e` (whose name and offset are set) and
// fills its other fields, taking marked values from the zip64 extra field.
Status FillEntry(const CentralHeader& h, std::span<const std::byte> extra, uint64_t extra_offset,
                 CentralEntry* e) {
  ZF_TRY(CheckEntryName(e->name).WithOffset(e->offset + kCentralFileHeaderSize));
  if (h.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders)) {
    return Status::Unsupported("encrypted entry (general purpose flags " + Hex(h.flags, 4) + ")")
        .WithOffset(e->offset + kCentralFlagsOffset);
  }
  if (h.flags & kFlagPatch) {
    return Status::Unsupported("patch data entry (general purpose flags " + Hex(h.flags, 4) +
                               "), which torch refuses to read")
        .WithOffset(e->offset + kCentralFlagsOffset);
  }
  if (h.method != kMethodStored && h.method != kMethodDeflated) {
    return Status::Unsupported("compression method " + DescribeMethod(h.method) +
                               "; only stored (method 0) and deflated (method 8) entries are read")
        .WithOffset(e->offset + kCentralMethodOffset);
  }
  ZF_ASSIGN_OR_RETURN(ExtraField ef, ParseExtraField(extra, extra_offset));
  const bool need_zip64 = h.uncompressed_size == kZip64Marker32 ||
                          h.compressed_size == kZip64Marker32 || h.header_offset == kZip64Marker32 ||
                          h.disk_start == kZip64Marker16;
  if (need_zip64 && !ef.has_zip64) {
    return Status::Corrupt("a size, offset or disk field holds the zip64 marker, but the entry "
                           "has no zip64 extra field")
        .WithOffset(e->offset + kCentralCompressedSizeOffset);
  }
  // APPNOTE 4.5.3: only the marked fields are present, in this order.
  uint64_t uncompressed = h.uncompressed_size;
  uint64_t compressed = h.compressed_size;
  uint64_t header_offset = h.header_offset;
  uint32_t disk_start = h.disk_start;
  if (h.uncompressed_size == kZip64Marker32) {
    ZF_ASSIGN_OR_RETURN(uncompressed, ReadZip64Value(ef.zip64, "the uncompressed size"));
  }
  if (h.compressed_size == kZip64Marker32) {
    ZF_ASSIGN_OR_RETURN(compressed, ReadZip64Value(ef.zip64, "the compressed size"));
  }
  if (h.header_offset == kZip64Marker32) {
    ZF_ASSIGN_OR_RETURN(header_offset, ReadZip64Value(ef.zip64, "the local header offset"));
  }
  if (h.disk_start == kZip64Marker16) {
    if (ef.zip64.remaining() < 4) {
      return Status::Corrupt("zip64 extra field has no room for the disk number (" +
                             std::to_string(ef.zip64.remaining()) + " bytes left)")
          .WithOffset(ef.zip64.offset());
    }
    disk_start = ef.zip64.U32le().value();
  }
  if (disk_start != 0) {
    return Status::Unsupported("multi-disk archive: entry starts on disk " + std::to_string(disk_start))
        .WithOffset(e->offset + kCentralDiskStartOffset);
  }
  if (h.method == kMethodStored && compressed != uncompressed) {
    return Status::Corrupt("stored entry has compressed size " + std::to_string(compressed) +
                           " but uncompressed size " + std::to_string(uncompressed))
        .WithOffset(e->offset + kCentralCompressedSizeOffset);
  }
  // Checked before any byte is inflated: a declared size no stream of this
  // length can reach is a lie (zip/format.h kMaxDeflateRatio).
  if (h.method == kMethodDeflated && uncompressed / kMaxDeflateRatio > compressed) {
    return Status::Corrupt("deflated entry declares " + std::to_string(uncompressed) + " bytes from " +
                           std::to_string(compressed) + " compressed bytes, more than deflate can encode")
        .WithOffset(e->offset + kCentralCompressedSizeOffset);
  }
  e->flags = h.flags;
  e->method = h.method;
  e->crc32 = h.crc32;
  e->size = uncompressed;
  e->compressed_size = compressed;
  e->header_offset = header_offset;
  e->external_attributes = h.external_attributes;
  return Status::OK();
}

Result<CentralEntry> ParseEntry(io::Cursor& cur, uint64_t index) {
  CentralEntry e;
  e.offset = cur.offset();
  if (cur.remaining() < kCentralFileHeaderSize) {
    return Status::Corrupt("central directory ends inside entry " + std::to_string(index) + " (" +
                           std::to_string(cur.remaining()) + " bytes left, " +
                           std::to_string(kCentralFileHeaderSize) + " needed)")
        .WithOffset(e.offset);
  }
  const CentralHeader h = DecodeCentralHeader(cur.Take(kCentralFileHeaderSize).value().data());
  if (h.signature != kCentralFileHeaderSignature) {
    return Status::Corrupt("central directory entry " + std::to_string(index) + " has signature " +
                           Hex(h.signature, 8) + ", expected " + Hex(kCentralFileHeaderSignature, 8))
        .WithOffset(e.offset);
  }
  ZF_ASSIGN_OR_RETURN(std::string_view name, cur.TakeString(h.name_length));
  e.name = std::string(name);
  const uint64_t extra_offset = cur.offset();
  Result<std::span<const std::byte>> extra = cur.Take(h.extra_length);
  if (!extra.ok()) return std::move(extra).status().WithRecord(e.name);
  ZF_TRY(cur.Skip(h.comment_length).WithRecord(e.name));
  ZF_TRY(FillEntry(h, extra.value(), extra_offset, &e).WithRecord(e.name));
  return e;
}

}  // namespace

Result<std::vector<CentralEntry>> ParseCentralDirectory(std::span<const std::byte> bytes,
                                                        uint64_t offset, uint64_t count) {
  if (count > bytes.size() / kCentralFileHeaderSize) {
    return Status::Corrupt(std::to_string(count) + " entries need at least " +
                           std::to_string(count) + " x " + std::to_string(kCentralFileHeaderSize) +
                           " bytes, but the central directory has " + std::to_string(bytes.size()))
        .WithOffset(offset);
  }
  std::vector<CentralEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  io::Cursor cur(bytes, offset);
  for (uint64_t i = 0; i < count; ++i) {
    ZF_ASSIGN_OR_RETURN(CentralEntry e, ParseEntry(cur, i));
    entries.push_back(std::move(e));
  }
  if (!cur.empty()) {
    return Status::Corrupt("central directory has " + std::to_string(cur.remaining()) +
                           " bytes after its " + std::to_string(count) + " declared entries")
        .WithOffset(cur.offset());
  }
  return entries;
}

namespace {


// MZ_TOLOWER: ASCII only (miniz.c defines it over 'A'..'Z').
char ToLowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// mz_zip_reader_filename_less: bytes compared lowercased, then lengths.
bool LessIgnoringCase(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const char x = ToLowerAscii(a[i]), y = ToLowerAscii(b[i]);
    if (x != y) return static_cast<unsigned char>(x) < static_cast<unsigned char>(y);
  }
  return a.size() < b.size();
}

bool EqualIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && !LessIgnoringCase(a, b) && !LessIgnoringCase(b, a);
}

// The DOS directory attribute in the low byte of the external attributes
// (miniz's MZ_ZIP_DOS_DIR_ATTRIBUTE_BITFLAG).
constexpr uint32_t kDosDirectoryAttribute = 0x10;

}  // namespace

Status CheckNameParity(const std::vector<CentralEntry>& central) {
  std::vector<size_t> order(central.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return LessIgnoringCase(central[a].name, central[b].name); });
  for (size_t k = 1; k < order.size(); ++k) {
    const size_t a = std::min(order[k - 1], order[k]), b = std::max(order[k - 1], order[k]);
    const CentralEntry& first = central[a];
    const CentralEntry& second = central[b];
    if (!EqualIgnoringCase(first.name, second.name)) continue;
    const std::string both = "central directory entries at " + std::to_string(first.offset) + " and " +
                             std::to_string(second.offset);
    if (first.name == second.name) {
      return Status::Ambiguous("duplicate entry name (" + both +
                               "): one name for two records, torch reads whichever its binary search reaches")
          .WithOffset(second.offset)
          .WithRecord(second.name);
    }
    return Status::Ambiguous("entry names " + Quote(first.name) + " and " + Quote(second.name) + " (" + both +
                             ") differ only in case: torch looks names up ignoring case and may read either "
                             "for both, zerofold reads each by its exact name")
        .WithOffset(second.offset)
        .WithRecord(second.name);
  }
  return Status::OK();
}

Status CheckDirectoryEntry(const CentralEntry& c) {
  const bool slash = !c.name.empty() && c.name.back() == '/';
  const bool attribute = (c.external_attributes & kDosDirectoryAttribute) != 0;
  if (c.size == 0 || (!slash && !attribute)) return Status::OK();
  return Status::Ambiguous(std::string("entry is marked a directory (") +
                           (slash ? "its name ends in '/'" : "external attributes " + Hex(c.external_attributes, 8)) +
                           ") but holds " + std::to_string(c.size) +
                           " bytes: torch reads none of them (an unwritten buffer), zerofold would read them")
      .WithOffset(c.offset + (slash ? kCentralFileHeaderSize : kCentralExternalAttributesOffset))
      .WithRecord(c.name);
}

Status CheckDataFits(const CentralEntry& c, uint64_t cd_offset) {
  const uint64_t header = uint64_t{kLocalFileHeaderSize} + c.name.size();
  const std::optional<uint64_t> data = io::CheckedAdd(c.header_offset, header);
  if (data && io::RangeInside(*data, c.compressed_size, cd_offset)) return Status::OK();
  return Status::Corrupt("entry of " + std::to_string(c.compressed_size) + " bytes with its local header at " +
                         std::to_string(c.header_offset) + " runs past the central directory at " +
                         std::to_string(cd_offset) + " (the file ends at or after it)")
      .WithOffset(c.offset + kCentralCompressedSizeOffset)
      .WithRecord(c.name);
}

Status CheckArchiveStart(const std::vector<CentralEntry>& central) {
  const CentralEntry& first = *std::min_element(
      central.begin(), central.end(),
      [](const CentralEntry& a, const CentralEntry& b) { return a.header_offset < b.header_offset; });
  if (first.header_offset == 0) return Status::OK();
  return Status::Ambiguous(std::to_string(first.header_offset) +
                           " bytes before the first entry's local header belong to no entry: torch reads the "
                           "entries the central directory lists, a reader walking local headers from offset 0 "
                           "(zerofold reading a pipe) reads those bytes as a record")
      .WithOffset(0)
      .WithRecord(first.name);
}

}  // namespace zerofold::zip
