// Writing torch zip archives as torch 1.13's torch.save lays them out:
// <top>/data.pkl, <top>/data/<key> for each storage in string order of the
// keys, then the other records (version, byteorder, ...). An archive without
// a `version` record gets one holding "3\n", without which torch 1.13
// refuses it. The zip layer (zip/writer.h) gives alignment, descriptors and
// zip64. Storage bytes are produced on demand, record by record, through a
// bounded buffer: memory is O(buffer + data.pkl), never O(model).
#ifndef ZEROFOLD_TORCH_ARCHIVE_WRITER_H_
#define ZEROFOLD_TORCH_ARCHIVE_WRITER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

struct StorageRecord {
  std::string key;     // data/<key>
  uint64_t nbytes = 0; // exact bytes the filler must emit
};

struct ExtraRecord {
  std::string name;               // relative to the top folder, e.g. "version"
  std::vector<std::byte> bytes;
};

// Emits bytes of the record being written; returns its error to the filler.
using EmitBytes = std::function<Status(std::span<const std::byte>)>;
// Produces the bytes of storages[index] by calling emit, in order.
using FillStorage = std::function<Status(size_t index, const EmitBytes& emit)>;

struct ArchiveContents {
  std::string top_folder;                 // "archive", the input's, or the output stem
  std::span<const std::byte> data_pkl;
  std::span<const StorageRecord> storages;
  std::span<const ExtraRecord> extras;    // written after the storages, in order
};

// Writes the archive to sink. FillStorage is called once per storage, in
// string order of the keys. kInternal if a filler emits a different number
// of bytes than declared; kInvalidArgument for duplicate keys.
Status WriteTorchArchive(const ArchiveContents& contents, const FillStorage& fill, Sink* sink);

// Produces the records written after the storages; called once, after the
// last FillStorage call. Its error is returned by WriteTorchArchive.
using LateExtras = std::function<Result<std::vector<ExtraRecord>>()>;

// As above, but the records after the storages come from `extras` instead of
// contents.extras (ignored): for an input read in one pass, whose other
// records follow its storages.
Status WriteTorchArchive(const ArchiveContents& contents, const FillStorage& fill, const LateExtras& extras,
                         Sink* sink);

// The order WriteTorchArchive writes storages in: indexes sorted by key.
std::vector<size_t> StorageWriteOrder(std::span<const StorageRecord> storages);

// The exact size of the archive WriteTorchArchive would write.
uint64_t TorchArchiveSize(const ArchiveContents& contents);
// The same for a data.pkl of data_pkl_size bytes (contents.data_pkl ignored).
uint64_t TorchArchiveSize(const ArchiveContents& contents, uint64_t data_pkl_size);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_ARCHIVE_WRITER_H_
