#include "torch/storage_source.h"

#include <algorithm>
#include <cstring>

#include "torch/format.h"

namespace zerofold::torch {

uint32_t ByteSwapUnit(const Storage& s) {
  if (s.untyped) return 1;
  const DTypeInfo& info = Info(s.dtype);
  const uint32_t unit = info.is_complex ? std::max<uint32_t>(info.itemsize / 2, 1) : info.itemsize;
  return std::max<uint32_t>(unit, 1);
}

void MarkByteSwaps(Checkpoint& ckpt) {
  if (!ckpt.big_endian) return;
  for (Storage& s : ckpt.storages) s.swap_unit = ByteSwapUnit(s);
}

void SwapBytes(std::span<std::byte> bytes, uint32_t unit) {
  if (unit <= 1) return;
  for (size_t i = 0; i + unit <= bytes.size(); i += unit) std::reverse(bytes.begin() + i, bytes.begin() + i + unit);
}

Result<size_t> SwappedSource::ReadAt(uint64_t offset, std::span<std::byte> dst) const {
  if (unit_ <= 1 || dst.empty()) return base_.ReadAt(offset, dst);
  // The whole runs covering [offset, offset + dst.size()), read and swapped
  // a run at a time at the edges, straight into dst in between.
  const uint64_t end = offset + dst.size();
  size_t done = 0;
  std::byte run[16];
  while (done < dst.size()) {
    const uint64_t pos = offset + done;
    const uint64_t run_begin = pos - pos % unit_;
    if (pos == run_begin && end - pos >= unit_) {
      // Whole runs: read them in place, then swap.
      const size_t whole = static_cast<size_t>((end - pos) / unit_ * unit_);
      ZF_ASSIGN_OR_RETURN(size_t got, base_.ReadAt(pos, dst.subspan(done, whole)));
      const size_t swapped = got / unit_ * unit_;
      SwapBytes(dst.subspan(done, swapped), unit_);
      done += swapped;
      if (got < whole) {
        // The source ended inside a run: nothing of it can be given.
        return done;
      }
      continue;
    }
    // A run cut by the edge of the read.
    std::span<std::byte> tmp(run, unit_);
    ZF_ASSIGN_OR_RETURN(size_t got, base_.ReadAt(run_begin, tmp));
    if (got < unit_) return done;
    SwapBytes(tmp, unit_);
    const size_t from = static_cast<size_t>(pos - run_begin);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(unit_ - from, end - pos));
    std::memcpy(dst.data() + done, tmp.data() + from, n);
    done += n;
  }
  return done;
}

bool IsByteOrderRecord(std::string_view relative_name) { return relative_name == kByteOrderRecord; }

void RecordLittleEndian(std::vector<ExtraRecord>& extras) {
  for (ExtraRecord& e : extras) {
    if (!IsByteOrderRecord(e.name)) continue;
    e.bytes.resize(kByteOrderLittle.size());
    std::memcpy(e.bytes.data(), kByteOrderLittle.data(), kByteOrderLittle.size());
  }
}


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
  if (s.swap_unit <= 1 || bytes_ == Bytes::kAsStored) return static_cast<const RandomSource*>(source);
  swapped_ = std::make_unique<SwappedSource>(*source, s.swap_unit);
  return static_cast<const RandomSource*>(swapped_.get());
}

}  // namespace zerofold::torch
