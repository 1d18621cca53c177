#include "zip/extra_field.h"

#include <string>

#include "zip/describe.h"
#include "zip/format.h"

namespace zerofold::zip {

Result<ExtraField> ParseExtraField(std::span<const std::byte> extra, uint64_t offset) {
  ExtraField out;
  io::Cursor cur(extra, offset);
  while (!cur.empty()) {
    const uint64_t block_offset = cur.offset();
    if (cur.remaining() < kExtraFieldHeaderSize) {
      return Status::Corrupt("extra field ends inside a block header (" +
                             std::to_string(cur.remaining()) + " bytes left, " +
                             std::to_string(kExtraFieldHeaderSize) + " needed)")
          .WithOffset(block_offset);
    }
    const uint16_t id = cur.U16le().value();
    const uint16_t size = cur.U16le().value();
    if (cur.remaining() < size) {
      return Status::Corrupt("extra field block " + Hex(id, 4) + " declares " +
                             std::to_string(size) + " bytes, " + std::to_string(cur.remaining()) +
                             " left in the extra field")
          .WithOffset(block_offset);
    }
    const uint64_t data_offset = cur.offset();
    std::span<const std::byte> data = cur.Take(size).value();
    if (id == kZip64ExtraFieldId) {
      if (out.has_zip64)
        return Status::Corrupt("second zip64 extra field block").WithOffset(block_offset);
      out.has_zip64 = true;
      out.zip64 = io::Cursor(data, data_offset);
    }
  }
  return out;
}

Result<uint64_t> ReadZip64Value(io::Cursor& zip64, const char* what) {
  if (zip64.remaining() < 8) {
    return Status::Corrupt(std::string("zip64 extra field has no room for ") + what + " (" +
                           std::to_string(zip64.remaining()) + " bytes left)")
        .WithOffset(zip64.offset());
  }
  return zip64.U64le().value();
}

}  // namespace zerofold::zip
