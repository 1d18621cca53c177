#include "torch/zip_checkpoint.h"

#include "torch/storage_source.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "io/cursor.h"
#include "pickle/decoder.h"
#include "torch/format.h"
#include "torch/tensor_recognizer.h"
#include "zip/archive.h"
#include "zip/crc32.h"
#include "zip/entry_source.h"

namespace zerofold::torch {
namespace {


// The part of an entry name below the top folder, or the whole name.
std::string_view Relative(const zip::Archive& ar, std::string_view name) {
  if (!ar.top_folder.empty() && name.size() > ar.top_folder.size() && name.starts_with(ar.top_folder) &&
      name[ar.top_folder.size()] == '/')
    return name.substr(ar.top_folder.size() + 1);
  return name;
}

Status RejectTorchScript(const zip::Archive& ar) {
  for (const zip::Entry& e : ar.entries) {
    if (IsTorchScriptRecord(Relative(ar, e.name))) return TorchScriptArchive(e.name, e.header_offset);
  }
  return Status::OK();
}

Result<bool> ReadByteOrder(const RandomSource& src, const zip::Entry& listed) {
  ZF_ASSIGN_OR_RETURN(const zip::Entry e, zip::LocateEntry(src, listed));
  if (e.size > kMaxByteOrderBytes)
    return Status::Corrupt("byteorder record has " + std::to_string(e.size) + " bytes, expected \"little\" or \"big\"")
        .WithRecord(e.name)
        .WithOffset(e.data_offset);
  Result<std::vector<std::byte>> bytes = zip::ReadEntry(src, e, kMaxByteOrderBytes);
  if (!bytes.ok()) {
    Status s = bytes.status();
    return s.WithRecord(e.name);
  }
  std::string_view text = io::AsChars(*bytes);
  if (text == kByteOrderBig) return true;
  if (text == kByteOrderLittle) return false;
  return Status::Corrupt("byteorder record says \"" + std::string(text) + "\", expected \"little\" or \"big\"")
      .WithRecord(e.name)
      .WithOffset(e.data_offset);
}

}  // namespace

bool IsTorchScriptRecord(std::string_view relative) {
  return relative == kTorchScriptConstantsRecord || relative.starts_with(kTorchScriptCodeFolder);
}

Status TorchScriptArchive(std::string_view record, uint64_t offset) {
  return Status::Unsupported("a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
      .WithRecord(record)
      .WithOffset(offset);
}

Status ExplainTorchScript(Status s) {
  std::string_view record = s.record();
  size_t slash = record.find('/');
  if (s.code() == Code::kUnsupported && slash != std::string_view::npos &&
      IsTorchScriptRecord(record.substr(slash + 1)))
    return TorchScriptArchive(record, s.offset());
  return s;
}

Result<Checkpoint> ReadZipCheckpoint(const RandomSource& src, const ReadOptions& options) {
  Result<zip::Archive> read = zip::ReadArchive(src, options.zip);
  if (!read.ok()) return ExplainTorchScript(read.status());
  zip::Archive ar = std::move(read).value();
  ZF_TRY(RejectTorchScript(ar));
  if (ar.top_folder.empty()) {
    // A name that leaves the top folder may be one the local header
    // contradicts: that is the more precise error.
    if (!ar.entries.empty()) ZF_TRY(zip::LocateEntry(src, ar.entries[0]).status());
    std::string first = ar.entries.empty() ? "" : ar.entries[0].name;
    return Status::Corrupt(ar.entries.empty() ? "the archive has no records"
                                              : "the archive's records do not share one top folder")
        .WithRecord(first);
  }
  Checkpoint ckpt;
  ckpt.format = Format::kTorchZip;
  ckpt.top_folder = ar.top_folder;
  ckpt.zip_records = ar.entries.size();
  for (const zip::Entry& e : ar.entries) {
    ckpt.deflated_records += e.deflated();
    ckpt.crc_unrecorded_records += e.size > 0 && !zip::CrcRecorded(e.crc32);
  }
  std::string pkl_name = ar.top_folder + "/" + std::string(kDataPickleRecord);
  const zip::Entry* listed_pkl = ar.Find(kDataPickleRecord);
  if (!listed_pkl) return Status::Corrupt("the archive has no " + pkl_name).WithRecord(pkl_name);
  ZF_ASSIGN_OR_RETURN(const zip::Entry located_pkl, zip::LocateEntry(src, *listed_pkl));
  const zip::Entry* pkl = &located_pkl;
  if (pkl->size > options.max_pickle_bytes)
    return Status::Limit(pkl_name + " has " + std::to_string(pkl->size) + " bytes, more than " +
                         std::to_string(options.max_pickle_bytes) + " (--max-pickle-bytes)")
        .WithRecord(pkl->name)
        .WithOffset(pkl->data_offset);
  ckpt.pickle_offset = pkl->data_offset;
  ckpt.pickle_size = pkl->size;
  {
    Result<std::vector<std::byte>> bytes = zip::ReadEntry(src, *pkl, options.max_pickle_bytes);
    if (!bytes.ok()) {
      Status s = bytes.status();
      return s.WithRecord(pkl->name);
    }
    Result<pickle::Decoded> d = pickle::Decode(*bytes, pkl->data_offset, options.pickle);
    if (!d.ok()) {
      Status s = d.status();
      return s.WithRecord(pkl->name);
    }
    // torch's unpickler would ignore them, but torch never writes them:
    // bytes after STOP mean the record is not what it claims.
    if (d->consumed != pkl->size)
      return Status::Corrupt(pkl_name + " has " + std::to_string(pkl->size - d->consumed) + " bytes after STOP")
          .WithRecord(pkl->name)
          .WithOffset(pkl->data_offset + d->consumed);
    ckpt.graph = std::move(d->graph);
    ckpt.root = d->root;
    ckpt.unsafe_globals = std::move(d->unsafe_globals);
  }

  for (const zip::Entry& e : ar.entries) {
    std::string_view rel = Relative(ar, e.name);
    if (rel == kDataPickleRecord || rel.starts_with(kDataFolder)) continue;
    if (rel == kByteOrderRecord) {
      ZF_ASSIGN_OR_RETURN(ckpt.big_endian, ReadByteOrder(src, e));
    }
    if (options.locate_records) {
      ZF_ASSIGN_OR_RETURN(zip::Entry located, zip::LocateEntry(src, e));
      ckpt.other_records.push_back(std::move(located));
    } else {
      ckpt.other_records.push_back(e);
    }
  }

Result<Recognized> rec =
      RecognizeTensors(ckpt.graph, ckpt.root, RecognizeOptionsFor(Format::kTorchZip, options));
  if (!rec.ok()) {
    Status s = rec.status();
    return s.WithRecord(pkl->name);
  }
  ckpt.storages = std::move(rec->storages);
  ckpt.tensors = std::move(rec->tensors);

  // Storage records in file order, so that their local headers are read
  // front to back.
  std::vector<std::pair<const zip::Entry*, Storage*>> records;
  for (Storage& s : ckpt.storages) {
    std::string relative = std::string(kDataFolder) + s.key;
    s.record = ar.top_folder + "/" + relative;
    const zip::Entry* e = ar.Find(relative);
    if (!e)
      return Status::Corrupt("storage '" + s.key + "' has no record " + s.record).WithRecord(s.record);
    records.emplace_back(e, &s);
  }
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.first->header_offset < b.first->header_offset; });
  for (auto [listed, storage] : records) {
    Storage& s = *storage;
    Result<zip::Entry> located = options.locate_records ? zip::LocateEntry(src, *listed) : *listed;
    if (!located.ok()) return located.status();
    const zip::Entry* e = &*located;
    // Never zero-fill: a short record means the file lost data.
    if (e->size < s.nbytes)
      return Status::Corrupt("record " + s.record + " has " + std::to_string(e->size) + " bytes, storage declares " +
                             std::to_string(s.nbytes))
          .WithRecord(s.record)
          .WithOffset(e->located() ? e->data_offset : e->header_offset);
    s.header_offset = e->header_offset;
    s.room_end = e->room_end;
    s.data_offset = e->data_offset;
    s.record_size = e->size;
    s.method = e->method;
    s.compressed_size = e->compressed_size;
    s.crc32 = e->crc32;
  }
  MarkByteSwaps(ckpt);
  return ckpt;
}

}  // namespace zerofold::torch
