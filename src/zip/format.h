// Zip format constants, named after PKWARE's APPNOTE.TXT (6.3.x) sections.
// Record sizes are built from their fields in spec order; offsets of the
// fields that code reads or patches are named too.
#ifndef ZEROFOLD_ZIP_FORMAT_H_
#define ZEROFOLD_ZIP_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace zerofold::zip {

// Signatures, each 4 bytes.
constexpr size_t kSignatureSize = 4;
constexpr uint32_t kLocalFileHeaderSignature = 0x04034b50;         // APPNOTE 4.3.7
constexpr uint32_t kDataDescriptorSignature = 0x08074b50;          // APPNOTE 4.3.9.3
constexpr uint32_t kCentralFileHeaderSignature = 0x02014b50;       // APPNOTE 4.3.12
constexpr uint32_t kZip64EndOfCentralDirSignature = 0x06064b50;    // APPNOTE 4.3.14
constexpr uint32_t kZip64EndOfCentralDirLocatorSignature = 0x07064b50;  // APPNOTE 4.3.15
constexpr uint32_t kEndOfCentralDirSignature = 0x06054b50;         // APPNOTE 4.3.16

// Local file header, APPNOTE 4.3.7: signature, version needed, flags,
// method, time, date, crc-32, compressed size, uncompressed size, name
// length, extra length; then the name and the extra field.
constexpr size_t kLocalFileHeaderSize = 4 + 2 + 2 + 2 + 2 + 2 + 4 + 4 + 4 + 2 + 2;
constexpr size_t kLocalFlagsOffset = 4 + 2;
constexpr size_t kLocalMethodOffset = kLocalFlagsOffset + 2;
constexpr size_t kLocalCrcOffset = kLocalMethodOffset + 2 + 2 + 2;
constexpr size_t kLocalCompressedSizeOffset = kLocalCrcOffset + 4;
constexpr size_t kLocalUncompressedSizeOffset = kLocalCompressedSizeOffset + 4;
constexpr size_t kLocalNameLengthOffset = kLocalUncompressedSizeOffset + 4;
constexpr size_t kLocalExtraLengthOffset = kLocalNameLengthOffset + 2;
static_assert(kLocalFileHeaderSize == 30);
static_assert(kLocalExtraLengthOffset + 2 == kLocalFileHeaderSize);

// Data descriptor, APPNOTE 4.3.9: optional signature, crc-32, compressed
// size, uncompressed size; sizes are 8 bytes when the local header carries a
// zip64 extra field (APPNOTE 4.3.9.2).
constexpr size_t kDataDescriptorSize = 4 + 4 + 4 + 4;
constexpr size_t kZip64DataDescriptorSize = 4 + 4 + 8 + 8;
// Offsets after the signature (or from the start when it is absent).
constexpr size_t kDescriptorCrcOffset = 0;
constexpr size_t kDescriptorCompressedSizeOffset = 4;

// Central directory file header, APPNOTE 4.3.12: signature, version made by,
// version needed, flags, method, time, date, crc-32, compressed size,
// uncompressed size, name length, extra length, comment length, disk number
// start, internal attributes, external attributes, local header offset; then
// the name, the extra field and the comment.
constexpr size_t kCentralFileHeaderSize =
    4 + 2 + 2 + 2 + 2 + 2 + 2 + 4 + 4 + 4 + 2 + 2 + 2 + 2 + 2 + 4 + 4;
constexpr size_t kCentralVersionMadeByOffset = 4;
constexpr size_t kCentralVersionNeededOffset = kCentralVersionMadeByOffset + 2;
constexpr size_t kCentralFlagsOffset = kCentralVersionNeededOffset + 2;
constexpr size_t kCentralMethodOffset = kCentralFlagsOffset + 2;
constexpr size_t kCentralTimeOffset = kCentralMethodOffset + 2;
constexpr size_t kCentralDateOffset = kCentralTimeOffset + 2;
constexpr size_t kCentralCrcOffset = kCentralDateOffset + 2;
constexpr size_t kCentralCompressedSizeOffset = kCentralCrcOffset + 4;
constexpr size_t kCentralUncompressedSizeOffset = kCentralCompressedSizeOffset + 4;
constexpr size_t kCentralNameLengthOffset = kCentralUncompressedSizeOffset + 4;
constexpr size_t kCentralExtraLengthOffset = kCentralNameLengthOffset + 2;
constexpr size_t kCentralCommentLengthOffset = kCentralExtraLengthOffset + 2;
constexpr size_t kCentralDiskStartOffset = kCentralCommentLengthOffset + 2;
constexpr size_t kCentralInternalAttributesOffset = kCentralDiskStartOffset + 2;
constexpr size_t kCentralExternalAttributesOffset = kCentralInternalAttributesOffset + 2;
constexpr size_t kCentralLocalHeaderOffsetOffset = kCentralExternalAttributesOffset + 4;
static_assert(kCentralFileHeaderSize == 46);
static_assert(kCentralLocalHeaderOffsetOffset + 4 == kCentralFileHeaderSize);

// Zip64 end of central directory record, APPNOTE 4.3.14: signature, size of
// the remaining record, version made by, version needed, this disk, disk of
// the central directory, entries on this disk, total entries, central
// directory size, central directory offset; then extensible data.
constexpr size_t kZip64EndOfCentralDirSize = 4 + 8 + 2 + 2 + 4 + 4 + 8 + 8 + 8 + 8;
constexpr size_t kZip64EndOfCentralDirLeadSize = 4 + 8;  // not counted in "size of record"
constexpr size_t kZip64EndRecordSizeOffset = 4;
constexpr size_t kZip64EndDiskOffset = kZip64EndRecordSizeOffset + 8 + 2 + 2;
constexpr size_t kZip64EndCdDiskOffset = kZip64EndDiskOffset + 4;
constexpr size_t kZip64EndEntriesOnDiskOffset = kZip64EndCdDiskOffset + 4;
constexpr size_t kZip64EndEntriesOffset = kZip64EndEntriesOnDiskOffset + 8;
constexpr size_t kZip64EndCdSizeOffset = kZip64EndEntriesOffset + 8;
constexpr size_t kZip64EndCdOffsetOffset = kZip64EndCdSizeOffset + 8;
static_assert(kZip64EndOfCentralDirSize == 56);
static_assert(kZip64EndCdOffsetOffset + 8 == kZip64EndOfCentralDirSize);

// Zip64 end of central directory locator, APPNOTE 4.3.15: signature, disk
// of the zip64 end record, its offset, total number of disks.
constexpr size_t kZip64EndOfCentralDirLocatorSize = 4 + 4 + 8 + 4;
constexpr size_t kZip64LocatorDiskOffset = 4;
constexpr size_t kZip64LocatorRecordOffsetOffset = kZip64LocatorDiskOffset + 4;
constexpr size_t kZip64LocatorTotalDisksOffset = kZip64LocatorRecordOffsetOffset + 8;
static_assert(kZip64EndOfCentralDirLocatorSize == 20);

// End of central directory record, APPNOTE 4.3.16: signature, this disk,
// disk of the central directory, entries on this disk, total entries,
// central directory size, central directory offset, comment length; then
// the comment.
constexpr size_t kEndOfCentralDirSize = 4 + 2 + 2 + 2 + 2 + 4 + 4 + 2;
constexpr size_t kEndDiskOffset = 4;
constexpr size_t kEndCdDiskOffset = kEndDiskOffset + 2;
constexpr size_t kEndEntriesOnDiskOffset = kEndCdDiskOffset + 2;
constexpr size_t kEndEntriesOffset = kEndEntriesOnDiskOffset + 2;
constexpr size_t kEndCdSizeOffset = kEndEntriesOffset + 2;
constexpr size_t kEndCdOffsetOffset = kEndCdSizeOffset + 4;
constexpr size_t kEndOfCentralDirCommentLengthOffset = kEndCdOffsetOffset + 4;
constexpr size_t kMaxCommentSize = 0xFFFF;
static_assert(kEndOfCentralDirSize == 22);

// General purpose bit flags, APPNOTE 4.4.4.
constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagDataDescriptor = 1u << 3;
constexpr uint16_t kFlagPatch = 1u << 5;  // compressed patched data
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kFlagUtf8 = 1u << 11;
constexpr uint16_t kFlagMaskedHeaders = 1u << 13;  // central directory encryption

// Compression methods, APPNOTE 4.4.5.
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;
// The most bytes deflate (RFC 1951) can produce per compressed byte: a
// length-258 match coded in 1 + 1 bits (a dynamic block's shortest codes)
// takes a quarter byte, so 4 x 258 = 1032 (zlib's technical notes agree).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Extra fields, APPNOTE 4.5.1: a 2-byte id and a 2-byte data size, then data.
constexpr size_t kExtraFieldHeaderSize = 2 + 2;
constexpr uint16_t kZip64ExtraFieldId = 0x0001;  // APPNOTE 4.5.3

// A 16-bit or 32-bit field holding this value defers to the zip64 record or
// extra field (APPNOTE 4.4.1.4).
constexpr uint16_t kZip64Marker16 = 0xFFFF;
constexpr uint32_t kZip64Marker32 = 0xFFFFFFFF;

// Version needed to extract with zip64 records, APPNOTE 4.4.3.2.
constexpr uint16_t kVersionNeededZip64 = 45;

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_FORMAT_H_
