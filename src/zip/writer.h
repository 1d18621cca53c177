// Writing zip archives laid out as torch 1.13's PyTorchStreamWriter writes
// them: stored entries; local headers with flags 0x0808, zero CRC and sizes,
// an "FB" extra field filled with 'Z' so data starts on a 64-byte boundary; a
// data descriptor after each entry (zip64 form past 4 GiB); the central
// directory; a zip64 end record and locator, always; the end record.
// The same bytes are produced for files and pipes: nothing is seeked.
//
// Not thread-safe. The Writer does not own the sink.
#ifndef ZEROFOLD_ZIP_WRITER_H_
#define ZEROFOLD_ZIP_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerofold/env.h"

namespace zerofold::zip {

class Writer {
 public:
  explicit Writer(Sink* sink);
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Starts an entry named `name` (full name, e.g. "archive/data/0").
  // REQUIRES: no entry is open.
  Status BeginEntry(std::string_view name);
  // Appends data to the open entry, updating its CRC and size.
  Status Write(std::span<const std::byte> data);
  // Writes the data descriptor and closes the entry.
  Status EndEntry();
  // BeginEntry + Write + EndEntry.
  Status AddEntry(std::string_view name, std::span<const std::byte> data);
  // Writes the central directory and end records. REQUIRES: no entry open.
  Status Finish();

  // Bytes the archive will take for entries of these sizes with these names
  // (exact; used to plan shards and report sizes without writing).
  static uint64_t ArchiveSize(std::span<const std::pair<std::string, uint64_t>> entries);

 private:
  struct Written {
    std::string name;
    uint64_t header_offset;
    uint64_t size;
    uint32_t crc32;
  };
  Sink* sink_;
  std::vector<Written> done_;
  bool open_ = false;
  Written current_{};
  uint32_t crc_ = 0;
};

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_WRITER_H_
