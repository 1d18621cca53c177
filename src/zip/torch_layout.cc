#include "zip/torch_layout.h"

#include <algorithm>

#include "io/cursor.h"
#include "zip/format.h"

namespace zerofold::zip {
namespace {

constexpr uint16_t kTorchPaddingId = 'F' | ('B' << 8);  // "FB"
constexpr std::byte kTorchPaddingByte{'Z'};
constexpr uint16_t kZip64EndVersionMadeBy = 0x031E;  // miniz: Unix, spec 3.0

void Put16(std::vector<std::byte>* out, uint16_t v) {
  std::byte b[2];
  io::EncodeU16le(b, v);
  out->insert(out->end(), b, b + 2);
}
void Put32(std::vector<std::byte>* out, uint32_t v) {
  std::byte b[4];
  io::EncodeU32le(b, v);
  out->insert(out->end(), b, b + 4);
}
void Put64(std::vector<std::byte>* out, uint64_t v) {
  std::byte b[8];
  io::EncodeU64le(b, v);
  out->insert(out->end(), b, b + 8);
}
void PutName(std::vector<std::byte>* out, std::string_view name) {
  std::span<const std::byte> b = io::AsBytes(name);
  out->insert(out->end(), b.begin(), b.end());
}
uint32_t Saturate32(uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, kZip64Marker32)); }
uint16_t Saturate16(uint64_t v) { return static_cast<uint16_t>(std::min<uint64_t>(v, kZip64Marker16)); }

uint64_t Zip64BlockSize(const EntryLayout& l) {
  if (!l.has_zip64()) return 0;
  return kExtraFieldHeaderSize + (l.size_zip64 ? 16 : 0) + (l.offset_zip64 ? 8 : 0);
}

// The zip64 block; `compressed` is what miniz knows at that point (0 in the
// local header, the size in the central header).
void PutZip64Block(std::vector<std::byte>* out, const EntryLayout& l, uint64_t compressed) {
  if (!l.has_zip64()) return;
  Put16(out, kZip64ExtraFieldId);
  Put16(out, static_cast<uint16_t>((l.size_zip64 ? 16 : 0) + (l.offset_zip64 ? 8 : 0)));
  if (l.size_zip64) {
    Put64(out, l.size);
    Put64(out, compressed);
  }
  if (l.offset_zip64) Put64(out, l.header_offset);
}

}  // namespace

EntryLayout LayOutEntry(uint64_t header_offset, size_t name_size, uint64_t size) {
  EntryLayout l;
  l.header_offset = header_offset;
  l.size = size;
  l.name_size = name_size;
  l.size_zip64 = size >= kZip64Marker32;
  l.offset_zip64 = header_offset >= kZip64Marker32;
  l.descriptor = size > 0;
  const uint64_t unpadded =
      header_offset + kLocalFileHeaderSize + name_size + Zip64BlockSize(l) + kExtraFieldHeaderSize;
  l.padding = static_cast<uint16_t>((kTorchDataAlignment - unpadded % kTorchDataAlignment) %
                                    kTorchDataAlignment);
  return l;
}

uint16_t EntryLayout::flags() const {
  return static_cast<uint16_t>(kFlagUtf8 | (has_descriptor() ? kFlagDataDescriptor : 0));
}

uint64_t EntryLayout::local_header_size() const {
  return kLocalFileHeaderSize + name_size + Zip64BlockSize(*this) + kExtraFieldHeaderSize +
         padding;
}

uint64_t EntryLayout::descriptor_size() const {
  if (!has_descriptor()) return 0;
  return has_zip64() ? kZip64DataDescriptorSize : kDataDescriptorSize;
}

uint64_t EntryLayout::end_offset() const { return data_offset() + size + descriptor_size(); }

uint64_t EntryLayout::central_header_size() const {
  return kCentralFileHeaderSize + name_size + Zip64BlockSize(*this);
}

void AppendLocalHeader(const EntryLayout& l, std::string_view name, std::vector<std::byte>* out) {
  Put32(out, kLocalFileHeaderSignature);
  Put16(out, 0);  // version needed: miniz writes 0 for stored entries
  Put16(out, l.flags());
  Put16(out, kMethodStored);
  Put16(out, 0);  // time
  Put16(out, 0);  // date
  Put32(out, 0);  // CRC-32, in the descriptor
  Put32(out, 0);  // compressed size, in the descriptor
  Put32(out, 0);  // uncompressed size, in the descriptor
  Put16(out, static_cast<uint16_t>(name.size()));
  Put16(out, static_cast<uint16_t>(Zip64BlockSize(l) + kExtraFieldHeaderSize + l.padding));
  PutName(out, name);
  PutZip64Block(out, l, /*compressed=*/0);
  Put16(out, kTorchPaddingId);
  Put16(out, l.padding);
  out->insert(out->end(), l.padding, kTorchPaddingByte);
}

void AppendDataDescriptor(const EntryLayout& l, uint32_t crc32, std::vector<std::byte>* out) {
  if (!l.has_descriptor()) return;
  Put32(out, kDataDescriptorSignature);
  Put32(out, crc32);
  if (l.has_zip64()) {
    Put64(out, l.size);
    Put64(out, l.size);
  } else {
    Put32(out, static_cast<uint32_t>(l.size));
    Put32(out, static_cast<uint32_t>(l.size));
  }
}

void AppendCentralHeader(const EntryLayout& l, std::string_view name, uint32_t crc32,
                         std::vector<std::byte>* out) {
  Put32(out, kCentralFileHeaderSignature);
  Put16(out, 0);  // version made by
  Put16(out, 0);  // version needed
  Put16(out, l.flags());
  Put16(out, kMethodStored);
  Put16(out, 0);  // time
  Put16(out, 0);  // date
  Put32(out, crc32);
  Put32(out, Saturate32(l.size));
  Put32(out, Saturate32(l.size));
  Put16(out, static_cast<uint16_t>(name.size()));
  Put16(out, static_cast<uint16_t>(Zip64BlockSize(l)));
  Put16(out, 0);  // comment length
  Put16(out, 0);  // disk number start
  Put16(out, 0);  // internal attributes
  Put32(out, 0);  // external attributes
  Put32(out, Saturate32(l.header_offset));
  PutName(out, name);
  PutZip64Block(out, l, /*compressed=*/l.size);
}

void AppendEndRecords(uint64_t entries, uint64_t cd_offset, uint64_t cd_size, uint64_t end_offset,
                      std::vector<std::byte>* out) {
  if (entries == 0) cd_offset = cd_size = 0;  // miniz records no central directory
  Put32(out, kZip64EndOfCentralDirSignature);
  Put64(out, kZip64EndOfCentralDirSize - kZip64EndOfCentralDirLeadSize);
  Put16(out, kZip64EndVersionMadeBy);
  Put16(out, kVersionNeededZip64);
  Put32(out, 0);  // this disk
  Put32(out, 0);  // central directory disk
  Put64(out, entries);
  Put64(out, entries);
  Put64(out, cd_size);
  Put64(out, cd_offset);

  Put32(out, kZip64EndOfCentralDirLocatorSignature);
  Put32(out, 0);  // disk of the zip64 end record
  Put64(out, end_offset);
  Put32(out, 1);  // total disks

  Put32(out, kEndOfCentralDirSignature);
  Put16(out, 0);  // this disk
  Put16(out, 0);  // central directory disk
  Put16(out, Saturate16(entries));
  Put16(out, Saturate16(entries));
  Put32(out, Saturate32(cd_size));
  Put32(out, Saturate32(cd_offset));
  Put16(out, 0);  // comment length
}

static_assert(kTorchEndRecordsSize ==
              kZip64EndOfCentralDirSize + kZip64EndOfCentralDirLocatorSize + kEndOfCentralDirSize);

}  // namespace zerofold::zip
