#include "zip/end_records.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "zip/describe.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

struct EndOfCentralDir {
  uint64_t offset = 0;
  uint16_t disk = 0;
  uint16_t cd_disk = 0;
  uint16_t entries_on_disk = 0;
  uint16_t entries = 0;
  uint32_t cd_size = 0;
  uint32_t cd_offset = 0;
};

// Scans back from the end for a signature whose comment length reaches
// exactly to the end of the file: the comment may itself contain the
// signature, and bytes after the comment are not allowed. The last
// kFirstTailBytes are scanned first (a torch archive has no comment: its
// record is the last 22 bytes), then, if no record is there, the whole
// window a comment can need: the match nearest the end is found either way.
//
// torch reads another record when the comment hides one: miniz's
// mz_zip_reader_locate_header_sig (third_party/miniz-2.1.0 and -3.0.2
// alike) scans back from the end for the last signature with at least 22
// bytes after it and never looks at the comment length. That signature
// lies at or after ours; when it is not ours, the file is kAmbiguous.
constexpr uint64_t kFirstTailBytes = 4096;

Result<EndOfCentralDir> FindEndOfCentralDir(const RandomSource& src) {
  const uint64_t size = src.size();
  if (size < kEndOfCentralDirSize) {
    return Status::Corrupt("file of " + std::to_string(size) +
                           " bytes is too small for a zip end of central directory record (" +
                           std::to_string(kEndOfCentralDirSize) + " bytes)")
        .WithOffset(0);
  }
  const uint64_t full_window = std::min<uint64_t>(size, kEndOfCentralDirSize + kMaxCommentSize);
  std::vector<std::byte> tail;
  for (uint64_t window : {std::min(full_window, kFirstTailBytes), full_window}) {
    if (window <= tail.size()) continue;  // the first window was the whole file
    const uint64_t window_offset = size - window;
    tail.resize(static_cast<size_t>(window));
    ZF_TRY(ReadExactAt(src, window_offset, tail));
    std::optional<uint64_t> torch_offset;  // the last signature: miniz's pick
    for (size_t i = tail.size() - kEndOfCentralDirSize + 1; i-- > 0;) {
      const std::byte* p = tail.data() + i;
      if (io::DecodeU32le(p) != kEndOfCentralDirSignature) continue;
      if (!torch_offset) torch_offset = window_offset + i;
      const uint16_t comment_length = io::DecodeU16le(p + kEndOfCentralDirCommentLengthOffset);
      if (i + kEndOfCentralDirSize + comment_length != tail.size()) continue;
      if (*torch_offset != window_offset + i) {
        return Status::Ambiguous("two end of central directory records: torch (miniz) reads the last "
                                 "signature, at " + std::to_string(*torch_offset) +
                                 ", zerofold the record whose comment reaches the end of the file, at " +
                                 std::to_string(window_offset + i))
            .WithOffset(*torch_offset);
      }
      io::Cursor cur(std::span<const std::byte>(p, kEndOfCentralDirSize), window_offset + i);
      EndOfCentralDir e;
      e.offset = cur.offset();
      ZF_TRY(cur.Skip(4));
      ZF_ASSIGN_OR_RETURN(e.disk, cur.U16le());
      ZF_ASSIGN_OR_RETURN(e.cd_disk, cur.U16le());
      ZF_ASSIGN_OR_RETURN(e.entries_on_disk, cur.U16le());
      ZF_ASSIGN_OR_RETURN(e.entries, cur.U16le());
      ZF_ASSIGN_OR_RETURN(e.cd_size, cur.U32le());
      ZF_ASSIGN_OR_RETURN(e.cd_offset, cur.U32le());
      return e;
    }
  }
  return Status::Corrupt("no end of central directory record in the last " +
                         std::to_string(full_window) + " bytes: not a zip archive, or truncated")
      .WithOffset(size - full_window);
}

// A 16- or 32-bit end record field must hold the zip64 value or the marker.
Status CheckAgrees(const char* what, uint64_t field, uint64_t marker, uint64_t zip64_value,
                   uint64_t field_offset) {
  if (field == marker || field == zip64_value) return Status::OK();
  return Status::Corrupt(std::string("end record ") + what + " is " + std::to_string(field) +
                         " but the zip64 end record says " + std::to_string(zip64_value))
      .WithOffset(field_offset);
}

// Reads the locator before the end record and the zip64 end record it
// points at, and fills `out` from them.
Status ReadZip64Records(const RandomSource& src, const EndOfCentralDir& eocd, uint64_t locator_offset,
                        EndRecords* out) {
  std::byte loc[kZip64EndOfCentralDirLocatorSize];
  ZF_TRY(ReadExactAt(src, locator_offset, loc));
  io::Cursor lc(loc, locator_offset);
  ZF_TRY(lc.Skip(4));
  const uint32_t zip64_disk = lc.U32le().value();
  const uint64_t zip64_offset = lc.U64le().value();
  const uint32_t total_disks = lc.U32le().value();
  // Writers put 1 (APPNOTE) or 0 in "total number of disks" of a one-disk archive.
  if (zip64_disk != 0 || total_disks > 1) {
    return Status::Unsupported("multi-disk archive: zip64 locator names disk " +
                               std::to_string(zip64_disk) + " of " + std::to_string(total_disks))
        .WithOffset(locator_offset);
  }
  if (zip64_offset > locator_offset || locator_offset - zip64_offset < kZip64EndOfCentralDirSize) {
    return Status::Corrupt("zip64 locator points at " + std::to_string(zip64_offset) +
                           ", which leaves no room for the " +
                           std::to_string(kZip64EndOfCentralDirSize) +
                           "-byte zip64 end record before the locator at " +
                           std::to_string(locator_offset))
        .WithOffset(locator_offset);
  }
  std::byte rec[kZip64EndOfCentralDirSize];
  ZF_TRY(ReadExactAt(src, zip64_offset, rec));
  io::Cursor rc(rec, zip64_offset);
  const uint32_t signature = rc.U32le().value();
  if (signature != kZip64EndOfCentralDirSignature) {
    return Status::Corrupt("zip64 end record signature is " + Hex(signature, 8) + ", expected " +
                           Hex(kZip64EndOfCentralDirSignature, 8))
        .WithOffset(zip64_offset);
  }
  const uint64_t record_size = rc.U64le().value();
  // The record (and any extensible data) must end exactly at the locator.
  const uint64_t room = locator_offset - zip64_offset - kZip64EndOfCentralDirLeadSize;
  if (record_size != room) {
    return Status::Corrupt("zip64 end record declares " + std::to_string(record_size) +
                           " bytes after its size field, but the locator is " +
                           std::to_string(room) + " bytes further")
        .WithOffset(zip64_offset + kZip64EndRecordSizeOffset);
  }
  ZF_TRY(rc.Skip(2 + 2));  // version made by, version needed
  const uint32_t disk = rc.U32le().value();
  const uint32_t cd_disk = rc.U32le().value();
  const uint64_t entries_on_disk = rc.U64le().value();
  const uint64_t entries = rc.U64le().value();
  const uint64_t cd_size = rc.U64le().value();
  const uint64_t cd_offset = rc.U64le().value();
  if (disk != 0 || cd_disk != 0) {
    return Status::Unsupported("multi-disk archive: zip64 end record is on disk " +
                               std::to_string(disk) + ", central directory on disk " +
                               std::to_string(cd_disk))
        .WithOffset(zip64_offset + kZip64EndDiskOffset);
  }
  if (entries_on_disk != entries) {
    return Status::Corrupt("zip64 end record counts " + std::to_string(entries_on_disk) +
                           " entries on this disk but " + std::to_string(entries) + " in total")
        .WithOffset(zip64_offset + kZip64EndEntriesOnDiskOffset);
  }
  const uint64_t e = eocd.offset;
  ZF_TRY(CheckAgrees("disk number", eocd.disk, kZip64Marker16, 0, e + kEndDiskOffset));
  ZF_TRY(CheckAgrees("central directory disk", eocd.cd_disk, kZip64Marker16, 0, e + kEndCdDiskOffset));
  ZF_TRY(CheckAgrees("entries on this disk", eocd.entries_on_disk, kZip64Marker16, entries,
                     e + kEndEntriesOnDiskOffset));
  ZF_TRY(CheckAgrees("entry count", eocd.entries, kZip64Marker16, entries, e + kEndEntriesOffset));
  ZF_TRY(CheckAgrees("central directory size", eocd.cd_size, kZip64Marker32, cd_size,
                     e + kEndCdSizeOffset));
  ZF_TRY(CheckAgrees("central directory offset", eocd.cd_offset, kZip64Marker32, cd_offset,
                     e + kEndCdOffsetOffset));
  out->zip64 = true;
  out->zip64_eocd_offset = zip64_offset;
  out->entries = entries;
  out->cd_size = cd_size;
  out->cd_offset = cd_offset;
  out->end_records_offset = zip64_offset;
  return Status::OK();
}

}  // namespace

Result<EndRecords> ReadEndRecords(const RandomSource& src) {
  ZF_ASSIGN_OR_RETURN(EndOfCentralDir eocd, FindEndOfCentralDir(src));
  EndRecords out;
  out.eocd_offset = eocd.offset;

  bool has_locator = false;
  const uint64_t locator_offset = eocd.offset - std::min<uint64_t>(eocd.offset, kZip64EndOfCentralDirLocatorSize);
  if (eocd.offset >= kZip64EndOfCentralDirLocatorSize) {
    std::byte sig[4];
    ZF_TRY(ReadExactAt(src, locator_offset, sig));
    has_locator = io::DecodeU32le(sig) == kZip64EndOfCentralDirLocatorSignature;
  }
  if (has_locator) {
    ZF_TRY(ReadZip64Records(src, eocd, locator_offset, &out));
  } else {
    if (eocd.disk != 0 || eocd.cd_disk != 0) {
      return Status::Unsupported("multi-disk archive: end record is on disk " +
                                 std::to_string(eocd.disk) + ", central directory on disk " +
                                 std::to_string(eocd.cd_disk))
          .WithOffset(eocd.offset + kEndDiskOffset);
    }
    if (eocd.entries_on_disk != eocd.entries) {
      return Status::Corrupt("end record counts " + std::to_string(eocd.entries_on_disk) +
                             " entries on this disk but " + std::to_string(eocd.entries) +
                             " in total")
          .WithOffset(eocd.offset + kEndEntriesOnDiskOffset);
    }
    // 0xFFFF entries is a real count without zip64, but an offset or size of
    // 0xFFFFFFFF only ever means "see the zip64 record".
    if (eocd.cd_offset == kZip64Marker32 || eocd.cd_size == kZip64Marker32) {
      return Status::Corrupt("end record defers to a zip64 end record (a field is 0xffffffff), "
                             "but no zip64 locator precedes it")
          .WithOffset(eocd.offset);
    }
    out.entries = eocd.entries;
    out.cd_size = eocd.cd_size;
    out.cd_offset = eocd.cd_offset;
    out.end_records_offset = eocd.offset;
  }

  std::optional<uint64_t> cd_end = io::CheckedAdd(out.cd_offset, out.cd_size);
  if (!cd_end || *cd_end > out.end_records_offset) {
    return Status::Corrupt("central directory (" + std::to_string(out.cd_size) + " bytes at " +
                           std::to_string(out.cd_offset) + ") runs past the end records at " +
                           std::to_string(out.end_records_offset))
        .WithOffset(out.cd_offset);
  }
  if (*cd_end != out.end_records_offset) {
    return Status::Corrupt(std::to_string(out.end_records_offset - *cd_end) +
                           " unaccounted bytes between the end of the central directory at " +
                           std::to_string(*cd_end) + " and the end records at " +
                           std::to_string(out.end_records_offset))
        .WithOffset(*cd_end);
  }
  return out;
}

}  // namespace zerofold::zip
