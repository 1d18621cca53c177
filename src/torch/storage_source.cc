#include "torch/storage_source.h"

#include <algorithm>
#include <utility>

namespace zerofold::torch {

zip::Entry RecordEntry(const Storage& s) {
  zip::Entry e;
  e.name = s.record;
  e.data_offset = s.data_offset;
  e.size = s.record_size;
  e.crc32 = s.crc32;
  e.method = s.method;
  e.compressed_size = s.method == 0 ? s.record_size : s.compressed_size;
  return e;
}

StorageSources::StorageSources(const RandomSource& file) : file_(file) {}

Result<const RandomSource*> StorageSources::For(const Storage& s) {
  const zip::Entry entry = RecordEntry(s);
  if (!entry.deflated()) {
    stored_ = zip::OpenEntry(file_, entry);
    return static_cast<const RandomSource*>(stored_.get());
  }
  for (size_t i = 0; i < deflated_.size(); ++i) {
    if (deflated_[i].data_offset == s.data_offset) {
      std::rotate(deflated_.begin() + static_cast<std::ptrdiff_t>(i),
                  deflated_.begin() + static_cast<std::ptrdiff_t>(i) + 1, deflated_.end());
      return static_cast<const RandomSource*>(deflated_.back().source.get());
    }
  }
  if (deflated_.size() == kOpenDeflated) {
    Status closed = deflated_.front().source->Finish();
    deflated_.erase(deflated_.begin());
    ZF_TRY(closed);
  }
  deflated_.push_back(Open{s.data_offset, zip::OpenEntry(file_, entry)});
  return static_cast<const RandomSource*>(deflated_.back().source.get());
}

Status StorageSources::Finish() {
  for (Open& o : deflated_) ZF_TRY(o.source->Finish());
  deflated_.clear();
  return Status::OK();
}

}  // namespace zerofold::torch
