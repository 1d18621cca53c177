// Writing zip archives laid out as torch 1.13's PyTorchStreamWriter writes
// them: stored entries; local headers with flags 0x0808, zero CRC and sizes,
// an "FB" extra field filled with 'Z' so data starts on a 64-byte boundary; a
// data descriptor after each non-empty entry (zip64 form past 4 GiB); the
// central directory; a zip64 end record and locator, always; the end record.
// zip/torch_layout.h states the layout byte by byte.
// The same bytes are produced for files and pipes: nothing is seeked.
//
// Errors: misuse (a call out of order, a bad name, a size other than the
// declared one) is kInvalidArgument; a sink failure is returned with the
// sink's name as path. After a sink failure or a wrong-sized entry the
// archive is unusable and every later call returns that error again.
//
// Not thread-safe. The Writer does not own the sink.
#ifndef ZEROFOLD_ZIP_WRITER_H_
#define ZEROFOLD_ZIP_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "zerofold/env.h"
#include "zip/torch_layout.h"

namespace zerofold::zip {

class Writer {
 public:
  // Writes at the sink's current end; offsets in the archive count from
  // the first byte this Writer appends.
  explicit Writer(Sink* sink);
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Starts an entry named `name` (full name, e.g. "archive/data/0") whose
  // size is not known yet. Written like torch writes a non-empty entry
  // below 4 GiB; an entry that reaches 0xFFFFFFFF bytes fails in Write
  // (declare the size for those), and an empty one still gets a data
  // descriptor (torch writes none). kInvalidArgument for a name the
  // reader would refuse (see CheckEntryName), a folder name ("x/"), a name
  // longer than 65535 bytes, a repeated name, or while an entry is open or
  // after Finish.
  Status BeginEntry(std::string_view name);
  // Starts an entry of exactly `size` bytes: byte-identical to torch at
  // every size, zip64 forms included. EndEntry fails with
  // kInvalidArgument if a different number of bytes was written.
  Status BeginEntry(std::string_view name, uint64_t size);
  // Appends data to the open entry, updating its CRC and size.
  Status Write(std::span<const std::byte> data);
  // Writes the data descriptor and closes the entry.
  Status EndEntry();
  // BeginEntry(name, data.size()) + Write + EndEntry.
  Status AddEntry(std::string_view name, std::span<const std::byte> data);
  // Writes the central directory and end records; kInvalidArgument while
  // an entry is open or when called twice.
  Status Finish();

  // Bytes appended so far.
  uint64_t position() const { return offset_; }

  // Bytes the archive will take for entries of these sizes with these names
  // (exact for entries written with declared sizes or through AddEntry;
  // used to plan shards and report sizes without writing).
  static uint64_t ArchiveSize(std::span<const std::pair<std::string, uint64_t>> entries);

 private:
  struct Written {
    std::string name;
    EntryLayout layout;
    uint32_t crc32 = 0;
  };
  Status Begin(std::string_view name, EntryLayout layout, bool declared);
  Status Append(std::span<const std::byte> data);
  Status Fail(Status status);

  Sink* sink_;
  std::vector<Written> done_;
  std::unordered_set<std::string> names_;
  bool open_ = false;
  bool finished_ = false;
  Written current_{};
  bool declared_ = false;  // current_.layout.size is the promised size
  uint64_t written_ = 0;   // data bytes of the open entry
  uint64_t offset_ = 0;
  Status failed_;  // sticky: after a sink error every call returns it
  std::vector<std::byte> scratch_;
};

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_WRITER_H_
