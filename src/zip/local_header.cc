#include "zip/local_header.h"

#include <string>

#include "io/cursor.h"
#include "zip/describe.h"
#include "zip/format.h"

namespace zerofold::zip {

uint64_t LocalHeader::total_size() const {
  return uint64_t{kLocalFileHeaderSize} + name_length + extra_length;
}

Result<LocalHeader> DecodeLocalHeader(std::span<const std::byte> fixed, uint64_t offset) {
  io::Cursor cur(fixed, offset);
  LocalHeader h;
  h.offset = offset;
  ZF_ASSIGN_OR_RETURN(uint32_t signature, cur.U32le());
  if (signature != kLocalFileHeaderSignature) {
    return Status::Corrupt("local header signature is " + Hex(signature, 8) + ", expected " +
                           Hex(kLocalFileHeaderSignature, 8))
        .WithOffset(offset);
  }
  ZF_ASSIGN_OR_RETURN(h.version_needed, cur.U16le());
  ZF_ASSIGN_OR_RETURN(h.flags, cur.U16le());
  ZF_ASSIGN_OR_RETURN(h.method, cur.U16le());
  ZF_TRY(cur.Skip(2 + 2));  // time, date
  ZF_ASSIGN_OR_RETURN(h.crc32, cur.U32le());
  ZF_ASSIGN_OR_RETURN(h.compressed_size, cur.U32le());
  ZF_ASSIGN_OR_RETURN(h.uncompressed_size, cur.U32le());
  ZF_ASSIGN_OR_RETURN(h.name_length, cur.U16le());
  ZF_ASSIGN_OR_RETURN(h.extra_length, cur.U16le());
  return h;
}

Status CheckLocalFlagsAndMethod(const LocalHeader& h) {
  if (h.flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    return Status::Unsupported("encrypted entry (local header flags " + Hex(h.flags, 4) + ")")
        .WithOffset(h.offset + kLocalFlagsOffset);
  }
  if (h.method != kMethodStored && h.method != kMethodDeflated) {
    return Status::Unsupported("compression method " + DescribeMethod(h.method) +
                               " in the local header; only stored (method 0) and deflated (method 8) entries are read")
        .WithOffset(h.offset + kLocalMethodOffset);
  }
  return Status::OK();
}

}  // namespace zerofold::zip
