#include "zip/central_directory.h"

#include <string>
#include <vector>

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

}  // namespace zerofold::zip
