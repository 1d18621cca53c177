// The bytes torch 1.13 writes around each entry (PyTorchStreamWriter over
// miniz 2.x with zip64 on): where the forms switch to zip64, how long each
// header is, and encoders for every record. The Writer streams with these;
// Writer::ArchiveSize adds up the same lengths.
//
// Per entry, at header offset H, of name N and size S (stored, so the
// compressed and uncompressed sizes are both S):
//   local header   version needed 0, flags 0x0808 (0x0800 when S == 0: no
//                  descriptor), method 0, time/date/CRC/sizes 0;
//                  extra = [zip64 block] + "FB" block of 'Z's that puts the
//                  data on a 64-byte boundary.
//   zip64 block    present when S >= 0xFFFFFFFF or H >= 0xFFFFFFFF; holds
//                  (S, 0) when S is large (the compressed size is not yet
//                  known when miniz writes it) and H when H is large.
//   data           S bytes.
//   descriptor     only when S > 0: signature, CRC, sizes; sizes are 8 bytes
//                  when the local header has the zip64 block, else 4.
//   central header version made by/needed 0, same flags, 32-bit fields
//                  saturated at 0xFFFFFFFF, extra = zip64 block (S, S, H as
//                  needed) when the local header had one; no "FB" block.
// After the central directory: a zip64 end record (version made by 0x031e,
// needed 45), its locator, and the end record with saturated fields; an
// archive without entries records central directory offset 0.
#ifndef ZEROFOLD_ZIP_TORCH_LAYOUT_H_
#define ZEROFOLD_ZIP_TORCH_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace zerofold::zip {

// torch's kFieldAlignment: data starts on a multiple of this.
constexpr uint64_t kTorchDataAlignment = 64;

struct EntryLayout {
  uint64_t header_offset = 0;
  uint64_t size = 0;
  size_t name_size = 0;
  bool size_zip64 = false;    // size >= 0xFFFFFFFF
  bool offset_zip64 = false;  // header_offset >= 0xFFFFFFFF
  uint16_t padding = 0;       // 'Z' bytes in the "FB" block
  bool descriptor = false;    // flag 0x08 and a data descriptor (torch: size > 0)

  // The zip64 block in the local and central headers (both or neither).
  bool has_zip64() const { return size_zip64 || offset_zip64; }
  bool has_descriptor() const { return descriptor; }
  uint16_t flags() const;
  uint64_t local_header_size() const;     // through the last padding byte
  uint64_t data_offset() const { return header_offset + local_header_size(); }
  uint64_t descriptor_size() const;       // 0 without a descriptor
  uint64_t end_offset() const;            // after data and descriptor
  uint64_t central_header_size() const;
};

// REQUIRES: name_size <= 0xFFFF.
EntryLayout LayOutEntry(uint64_t header_offset, size_t name_size, uint64_t size);

// Encoders; each appends exactly the size the layout states.
void AppendLocalHeader(const EntryLayout& layout, std::string_view name, std::vector<std::byte>* out);
void AppendDataDescriptor(const EntryLayout& layout, uint32_t crc32, std::vector<std::byte>* out);
void AppendCentralHeader(const EntryLayout& layout, std::string_view name, uint32_t crc32,
                         std::vector<std::byte>* out);

// Zip64 end record + locator + end record.
constexpr uint64_t kTorchEndRecordsSize = 56 + 20 + 22;
// `end_offset` is where the central directory ends (where these records go).
void AppendEndRecords(uint64_t entries, uint64_t cd_offset, uint64_t cd_size, uint64_t end_offset,
                      std::vector<std::byte>* out);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_TORCH_LAYOUT_H_
