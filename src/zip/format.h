// Zip format constants, named after PKWARE's APPNOTE.TXT (6.3.x) sections.
// Record sizes are built from their fields in spec order; offsets of the
// fields that code reads or patches are named too.
#ifndef ZEROFOLD_ZIP_FORMAT_H_
#define ZEROFOLD_ZIP_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace zerofold::zip {

// Signatures.
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
constexpr size_t kLocalNameLengthOffset = 4 + 2 + 2 + 2 + 2 + 2 + 4 + 4 + 4;
static_assert(kLocalFileHeaderSize == 30);

// Data descriptor, APPNOTE 4.3.9: optional signature, crc-32, compressed
// size, uncompressed size; sizes are 8 bytes when the local header carries a
// zip64 extra field (APPNOTE 4.3.9.2).
constexpr size_t kDataDescriptorSize = 4 + 4 + 4 + 4;
constexpr size_t kZip64DataDescriptorSize = 4 + 4 + 8 + 8;

// Central directory file header, APPNOTE 4.3.12: signature, version made by,
// version needed, flags, method, time, date, crc-32, compressed size,
// uncompressed size, name length, extra length, comment length, disk number
// start, internal attributes, external attributes, local header offset; then
// the name, the extra field and the comment.
constexpr size_t kCentralFileHeaderSize =
    4 + 2 + 2 + 2 + 2 + 2 + 2 + 4 + 4 + 4 + 2 + 2 + 2 + 2 + 2 + 4 + 4;
constexpr size_t kCentralFlagsOffset = 4 + 2 + 2;
constexpr size_t kCentralMethodOffset = kCentralFlagsOffset + 2;
constexpr size_t kCentralCrcOffset = kCentralMethodOffset + 2 + 2 + 2;
constexpr size_t kCentralCompressedSizeOffset = kCentralCrcOffset + 4;
constexpr size_t kCentralUncompressedSizeOffset = kCentralCompressedSizeOffset + 4;
constexpr size_t kCentralNameLengthOffset = kCentralUncompressedSizeOffset + 4;
constexpr size_t kCentralDiskStartOffset = kCentralNameLengthOffset + 2 + 2 + 2;
constexpr size_t kCentralLocalHeaderOffsetOffset = kCentralDiskStartOffset + 2 + 2 + 4;
static_assert(kCentralFileHeaderSize == 46);
static_assert(kCentralLocalHeaderOffsetOffset + 4 == kCentralFileHeaderSize);

// Zip64 end of central directory record, APPNOTE 4.3.14: signature, size of
// the remaining record, version made by, version needed, this disk, disk of
// the central directory, entries on this disk, total entries, central
// directory size, central directory offset; then extensible data.
constexpr size_t kZip64EndOfCentralDirSize = 4 + 8 + 2 + 2 + 4 + 4 + 8 + 8 + 8 + 8;
constexpr size_t kZip64EndOfCentralDirLeadSize = 4 + 8;  // not counted in "size of record"
static_assert(kZip64EndOfCentralDirSize == 56);

// Zip64 end of central directory locator, APPNOTE 4.3.15: signature, disk
// of the zip64 end record, its offset, total number of disks.
constexpr size_t kZip64EndOfCentralDirLocatorSize = 4 + 4 + 8 + 4;
static_assert(kZip64EndOfCentralDirLocatorSize == 20);

// End of central directory record, APPNOTE 4.3.16: signature, this disk,
// disk of the central directory, entries on this disk, total entries,
// central directory size, central directory offset, comment length; then
// the comment.
constexpr size_t kEndOfCentralDirSize = 4 + 2 + 2 + 2 + 2 + 4 + 4 + 2;
constexpr size_t kEndOfCentralDirCommentLengthOffset = kEndOfCentralDirSize - 2;
constexpr size_t kMaxCommentSize = 0xFFFF;
static_assert(kEndOfCentralDirSize == 22);

// General purpose bit flags, APPNOTE 4.4.4.
constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagDataDescriptor = 1u << 3;
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kFlagUtf8 = 1u << 11;
constexpr uint16_t kFlagMaskedHeaders = 1u << 13;  // central directory encryption

// Compression methods, APPNOTE 4.4.5.
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;

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
