// Parsing the central directory (APPNOTE 4.3.12) with zip64 extra fields
// (APPNOTE 4.5.3).
#ifndef ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_
#define ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerofold/result.h"
#include "zerofold/status.h"

namespace zerofold::zip {

struct CentralEntry {
  std::string name;
  uint64_t offset = 0;         // of this central directory header
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t size = 0;           // uncompressed
  uint64_t compressed_size = 0;  // == size when stored
  uint64_t header_offset = 0;  // of the local header
  uint32_t external_attributes = 0;
};

// Parses exactly `count` entries from `bytes`, the whole central directory,
// which starts at absolute offset `offset`. Each entry's 0xFFFFFFFF fields
// are replaced by its zip64 extra field's values.
// kUnsupported (record = entry name): a method other than stored and
// deflated, an encrypted entry or a patch (flag 0x0020: torch's miniz
// refuses both, mz_zip_reader_extract_to_mem_no_alloc), an entry starting
// on another disk.
// kCorrupt: a bad signature, a truncated entry, a missing or short zip64
// field, a stored entry whose compressed and uncompressed sizes differ, a
// deflated entry of more than 1032 bytes per compressed byte (more than
// deflate can encode), a name that
// CheckEntryName refuses, or bytes left after `count` entries.
// REQUIRES: the caller has capped `count` and bytes.size() (ReadOptions).
Result<std::vector<CentralEntry>> ParseCentralDirectory(std::span<const std::byte> bytes,
                                                        uint64_t offset, uint64_t count);

// Parity with torch: the archive-level checks that refuse, as
// kAmbiguous, a zip from which torch.load and zerofold could take different
// bytes (and, as kCorrupt or kUnsupported, one torch cannot read at all).
//
// torch reads a .pt zip through the miniz it vendors (torch 1.13:
// third_party/miniz-2.1.0; torch 2.x through HEAD: third_party/miniz-3.0.2;
// the rules below are the same in both) behind
// caffe2/serialize/inline_container.cc PyTorchStreamReader. The facts each
// check follows, with the source lines:
//
// - Names. getRecordID() looks a record up with
//   mz_zip_reader_locate_file(ar, "archive/" + name, nullptr, 0): flags 0,
//   so neither MZ_ZIP_FLAG_CASE_SENSITIVE nor ..._IGNORE_PATH, and the
//   lookup is mz_zip_locate_file_binary_search over the central directory
//   sorted by mz_zip_reader_filename_less, which compares MZ_TOLOWER()ed
//   bytes. Two names equal but for ASCII case ("archive/DATA.PKL" beside
//   "archive/data.pkl"), or equal outright, are one key to torch, and the
//   binary search returns whichever it lands on; zerofold looks names up
//   exactly. CheckNameParity refuses both.
// - Directories. mz_zip_reader_extract_to_mem_no_alloc returns at once,
//   reading nothing, when mz_zip_reader_is_file_a_directory() (the name ends
//   in '/' or the external attributes carry the DOS directory bit 0x10):
//   torch then hands out the buffer it allocated, unwritten. An entry so
//   marked that holds bytes is refused (CheckDirectoryEntry).
// - Where an entry's data lies. mz_zip_reader_read_central_dir refuses an
//   entry whose local_header_ofs + 30 + comp_size passes the archive size:
//   CheckDataFits refuses, before any local header is read, an entry whose
//   header, name and data cannot fit before the central directory.
// - Bytes before the archive. torch/serialization.py _is_zipfile takes a
//   file for a zip only when its first four bytes are a local header's
//   signature; mz_zip_reader_init (the m_pRead form torch uses) reads every
//   offset as absolute (m_file_archive_start_ofs is only set by the FILE*
//   initialisers). Bytes before the first listed entry are then a local
//   header no central entry names, which a reader walking local headers
//   from offset 0 (zerofold's own zip/stream_reader.h, for a pipe) reads as
//   a record: CheckArchiveStart refuses them.
// - Flags. mz_zip_reader_is_file_supported / extract refuse the encryption
//   bits (0x0001, 0x0040) and the patch bit (0x0020), and read_central_dir
//   the masked-headers bit (0x2000), all from the central directory; miniz
//   never looks at the local header's flags. A local header that says
//   encrypted where the central directory does not is read by torch as
//   plain bytes and by a local-header reader as ciphertext (LocateEntry
//   refuses it as ambiguous); the central bits are kUnsupported
//   (ParseCentralDirectory).
// - Local and central names. getRecordOffset() (torch.load with mmap, and
//   torch >= 2.1's storage offsets) takes the data offset from the local
//   header's name and extra lengths, never comparing the name; zerofold's
//   stream reader reads the local name. A local name that differs from the
//   central one is refused as ambiguous (LocateEntry).
// - The end record: zip/end_records.h (miniz takes the last signature).
// - CRC-32: torch builds miniz with MINIZ_DISABLE_ZIP_READER_CRC32_CHECKS
//   (cmake/Dependencies.cmake), so it never checks one, and torch >= 2.6
//   writes 0 for every CRC after torch.serialization.set_crc32_options(False)
//   (inline_container.cc writeRecord: MZ_ZIP_FLAG_DO_NOT_COMPUTE_CRC32).
//   zerofold reads a recorded 0 as "not recorded" (zip/crc32.h CrcRecorded) and checks
//   any other value on every read that streams a whole record.

// kAmbiguous when two central directory names are equal, or equal but for
// ASCII case; record = the later name, offset = its central header.
Status CheckNameParity(const std::vector<CentralEntry>& central);

// kAmbiguous for an entry marked a directory (a trailing '/', or the DOS
// directory attribute) that holds bytes.
Status CheckDirectoryEntry(const CentralEntry& c);

// kCorrupt when the entry's local header, its name (as the central
// directory gives it) and its compressed data cannot fit between its local
// header offset and the central directory at `cd_offset`; offset = the
// central directory's compressed size field.
Status CheckDataFits(const CentralEntry& c, uint64_t cd_offset);

// kAmbiguous when the first local header (in file order) does not start
// the file. REQUIRES: entries non-empty.
Status CheckArchiveStart(const std::vector<CentralEntry>& central);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_CENTRAL_DIRECTORY_H_
