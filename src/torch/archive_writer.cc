#include "torch/archive_writer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zip/writer.h"

namespace zerofold::torch {

namespace {

constexpr char kVersionRecord[] = "version";
constexpr char kDefaultVersion[] = "3\n";

bool HasVersion(std::span<const ExtraRecord> extras) {
  return std::any_of(extras.begin(), extras.end(), [](const ExtraRecord& e) { return e.name == kVersionRecord; });
}

std::string Prefix(const std::string& top) { return top.empty() ? std::string() : top + "/"; }

}  // namespace

std::vector<size_t> StorageWriteOrder(std::span<const StorageRecord> storages) {
  std::vector<size_t> order(storages.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return storages[a].key < storages[b].key; });
  return order;
}

Status WriteTorchArchive(const ArchiveContents& c, const FillStorage& fill, Sink* sink) {
  LateExtras extras = [&]() -> Result<std::vector<ExtraRecord>> {
    return std::vector<ExtraRecord>(c.extras.begin(), c.extras.end());
  };
  return WriteTorchArchive(c, fill, extras, sink);
}

Status WriteTorchArchive(const ArchiveContents& c, const FillStorage& fill, const LateExtras& late_extras,
                         Sink* sink) {
  std::vector<size_t> order = StorageWriteOrder(c.storages);
  for (size_t i = 1; i < order.size(); ++i)
    if (c.storages[order[i]].key == c.storages[order[i - 1]].key)
      return Status::InvalidArgument("two storages named data/" + c.storages[order[i]].key);
  const std::string prefix = Prefix(c.top_folder);
  zip::Writer zip(sink);
  ZF_TRY(zip.AddEntry(prefix + "data.pkl", c.data_pkl));
  for (size_t index : order) {
    const StorageRecord& rec = c.storages[index];
    const std::string name = prefix + "data/" + rec.key;
    // The size is known: declaring it lays the record out as torch does (no
    // data descriptor for an empty record, zip64 past 4 GiB), as
    // TorchArchiveSize assumes.
    ZF_TRY(zip.BeginEntry(name, rec.nbytes));
    uint64_t emitted = 0;
    EmitBytes emit = [&](std::span<const std::byte> bytes) -> Status {
      emitted += bytes.size();
      if (emitted > rec.nbytes)
        return Status::Internal("storage " + rec.key + " overflows its " + std::to_string(rec.nbytes) + " bytes");
      return zip.Write(bytes);
    };
    ZF_TRY(fill(index, emit));
    if (emitted != rec.nbytes)
      return Status::Internal("storage " + rec.key + " got " + std::to_string(emitted) + " of its " +
                              std::to_string(rec.nbytes) + " bytes");
    ZF_TRY(zip.EndEntry());
  }
  ZF_ASSIGN_OR_RETURN(const std::vector<ExtraRecord> extras, late_extras());
  for (const ExtraRecord& e : extras) ZF_TRY(zip.AddEntry(prefix + e.name, e.bytes));
  if (!HasVersion(extras)) {
    std::string_view v = kDefaultVersion;
    ZF_TRY(zip.AddEntry(prefix + kVersionRecord, std::as_bytes(std::span<const char>(v.data(), v.size()))));
  }
  return zip.Finish();
}

uint64_t TorchArchiveSize(const ArchiveContents& c) { return TorchArchiveSize(c, c.data_pkl.size()); }

uint64_t TorchArchiveSize(const ArchiveContents& c, uint64_t data_pkl_size) {
  const std::string prefix = Prefix(c.top_folder);
  std::vector<std::pair<std::string, uint64_t>> entries;
  entries.emplace_back(prefix + "data.pkl", data_pkl_size);
  for (size_t index : StorageWriteOrder(c.storages))
    entries.emplace_back(prefix + "data/" + c.storages[index].key, c.storages[index].nbytes);
  for (const ExtraRecord& e : c.extras) entries.emplace_back(prefix + e.name, e.bytes.size());
  if (!HasVersion(c.extras)) entries.emplace_back(prefix + kVersionRecord, sizeof(kDefaultVersion) - 1);
  return zip::Writer::ArchiveSize(entries);
}

}  // namespace zerofold::torch
