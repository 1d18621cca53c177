#include "torch/storage_source.h"

namespace zerofold::torch {

zip::Entry RecordEntry(const Storage& s) {
  zip::Entry e;
  e.name = s.record;
  e.header_offset = s.header_offset;
  e.data_offset = s.data_offset;
  e.room_end = s.room_end;
  e.size = s.record_size;
  e.crc32 = s.crc32;
  e.method = s.method;
  e.compressed_size = s.method == 0 ? s.record_size : s.compressed_size;
  return e;
}

Result<const RandomSource*> StorageSources::For(const Storage& s) {
  zip::Entry e = RecordEntry(s);
  if (crc_ == RecordCrc::kSkip) e.crc32 = 0;  // not recorded: not checked
  ZF_ASSIGN_OR_RETURN(zip::EntrySource * source, records_.Open(file_, e));
  return static_cast<const RandomSource*>(source);
}

}  // namespace zerofold::torch
