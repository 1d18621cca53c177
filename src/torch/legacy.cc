#include "torch/legacy.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/checked_math.h"
#include "io/cursor.h"
#include "pickle/safety.h"
#include "torch/format.h"
#include "torch/tensor_recognizer.h"

namespace zerofold::torch {
namespace {

using pickle::Kind;

// The first read is small: most legacy pickles are a few KiB, and storage
// bytes right behind them need not be read.
constexpr uint64_t kFirstChunk = 64 << 10;

// The magic number as LONG1 carries it, without redundant sign bytes.
bool IsMagicNumber(const pickle::Graph& g, pickle::NodeId n) {
  if (g.kind(n) != Kind::kBigInt) return false;
  std::string_view le = g.AsStr(n);
  while (le.size() > kLegacyMagicNumberLE.size() && le.back() == '\0') le.remove_suffix(1);
  return le == kLegacyMagicNumberLE;
}

Status NotATorchFile(std::string_view why) {
  return Status::Corrupt("not a torch file: neither a zip archive nor a legacy torch pickle (" + std::string(why) +
                         ")")
      .WithOffset(0);
}

// `check`, unless it failed on a pickle that named unsafe globals.
Status UnsafeFirst(const pickle::Decoded& d, std::string_view record, Status check) {
  if (check.ok() || d.unsafe_globals.empty() || check.code() == Code::kIO) return check;
  return Status::Unsafe("the " + std::string(record) + " names unsafe globals torch.load runs before it checks the file: " +
                        pickle::DescribeUnsafe(d.unsafe_globals))
      .WithOffset(check.offset())
      .WithRecord(record);
}

}  // namespace

void MergeLegacyUnsafe(std::vector<std::string>& into, const pickle::Decoded& small) {
  for (const std::string& g : small.unsafe_globals)
    if (std::find(into.begin(), into.end(), g) == into.end()) into.push_back(g);
}

Result<std::vector<std::string>> LegacyStorageKeys(const pickle::Decoded& keys, uint64_t offset) {
  if (keys.graph.kind(keys.root) != Kind::kList && keys.graph.kind(keys.root) != Kind::kTuple)
    return UnsafeFirst(keys, kKeysRecord,
                       Status::Corrupt("storage key list is not a list").WithOffset(offset).WithRecord(kKeysRecord));
  std::vector<std::string> out;
  for (pickle::NodeId k : keys.graph.Items(keys.root)) {
    if (keys.graph.kind(k) == Kind::kStr) {
      out.emplace_back(keys.graph.AsStr(k));
    } else if (keys.graph.kind(k) == Kind::kInt) {
      out.push_back(std::to_string(keys.graph.AsInt(k)));
    } else {
      return UnsafeFirst(keys, kKeysRecord,
                         Status::Corrupt("storage key list holds a value that is not a str")
                             .WithOffset(offset)
                             .WithRecord(kKeysRecord));
    }
  }
  return out;
}

Result<uint32_t> LocateLegacyKey(const std::unordered_map<std::string, uint32_t>& by_key, std::vector<bool>& located,
                                 const std::string& key, uint64_t offset) {
  auto it = by_key.find(key);
  if (it == by_key.end())
    return Status::Corrupt("the storage key list names '" + key + "', which no persistent id declares")
        .WithOffset(offset)
        .WithRecord(LegacyStorageRecord(key));
  if (located[it->second])
    return Status::Corrupt("storage key '" + key + "' is listed twice")
        .WithOffset(offset)
        .WithRecord(LegacyStorageRecord(key));
  located[it->second] = true;
  return it->second;
}

std::string LegacyStorageRecord(std::string_view key) { return "storage " + std::string(key); }

Result<pickle::Decoded> DecodePickleAt(const RandomSource& src, uint64_t offset, const ReadOptions& options,
                                       std::string_view record) {
  if (offset >= src.size())
    return Status::Corrupt("truncated: the file ends at " + std::to_string(src.size()) + " before this pickle")
        .WithOffset(offset)
        .WithRecord(record);
  uint64_t left = src.size() - offset;
  uint64_t cap = std::min(left, options.max_pickle_bytes);
  uint64_t chunk = std::min(cap, kFirstChunk);
  std::vector<std::byte> buf;
  while (true) {
    size_t have = buf.size();
    buf.resize(chunk);
    Status read = ReadExactAt(src, offset + have, std::span<std::byte>(buf).subspan(have));
    if (!read.ok()) return read.WithRecord(record);
    Result<pickle::Decoded> d = pickle::Decode(buf, offset, options.pickle);
    if (d.ok()) return d;
    if (!IsTruncation(d.status()) || chunk == cap) {
      if (IsTruncation(d.status()) && chunk < left)
        return Status::Limit("pickle is larger than " + std::to_string(options.max_pickle_bytes) +
                             " bytes (--max-pickle-bytes)")
            .WithOffset(offset)
            .WithRecord(record);
      Status s = d.status();
      return s.WithRecord(record);
    }
    chunk = std::min(cap, chunk * 4);
  }
}

bool IsTruncation(const Status& s) {
  return s.code() == Code::kCorrupt && std::string_view(s.message()).starts_with("truncated");
}

Status CheckLegacyMagic(const Result<pickle::Decoded>& magic) {
  if (!magic.ok()) {
    if (magic.status().code() == Code::kIO) return magic.status();
    return NotATorchFile("first pickle: " + magic.status().message());
  }
  if (!IsMagicNumber(magic->graph, magic->root))
    return UnsafeFirst(*magic, kMagicRecord, NotATorchFile("first pickle is not the legacy magic number"));
  return Status::OK();
}

Status CheckLegacyProtocol(const pickle::Decoded& protocol, uint64_t offset) {
  const pickle::Graph& g = protocol.graph;
  if (g.kind(protocol.root) == Kind::kInt && g.AsInt(protocol.root) == kLegacyProtocolVersion) return Status::OK();
  std::string got = g.kind(protocol.root) == Kind::kInt ? std::to_string(g.AsInt(protocol.root)) : "not an int";
  return UnsafeFirst(protocol, kProtocolRecord,
                     Status::Corrupt("legacy protocol version is " + got + ", expected " +
                                     std::to_string(kLegacyProtocolVersion))
                         .WithOffset(offset)
                         .WithRecord(kProtocolRecord));
}

Result<Checkpoint> ReadLegacyCheckpoint(const RandomSource& src, const ReadOptions& options) {
  uint64_t offset = 0;
  // 1. Magic number. A file that fails here is not a torch file at all.
  Result<pickle::Decoded> magic = DecodePickleAt(src, offset, options, kMagicRecord);
  ZF_TRY(CheckLegacyMagic(magic));
  offset += magic->consumed;

  // 2. Protocol version.
  ZF_ASSIGN_OR_RETURN(pickle::Decoded protocol, DecodePickleAt(src, offset, options, kProtocolRecord));
  ZF_TRY(CheckLegacyProtocol(protocol, offset));
  offset += protocol.consumed;

  // 3. sys_info: torch's loader does not look at it (data and counts are
  // little-endian whatever the writer's byte order).
  ZF_ASSIGN_OR_RETURN(pickle::Decoded sys_info, DecodePickleAt(src, offset, options, kSysInfoRecord));
  offset += sys_info.consumed;

  // 4. The object.
  Checkpoint ckpt;
  ckpt.format = Format::kTorchLegacy;
  ckpt.pickle_offset = offset;
  ZF_ASSIGN_OR_RETURN(pickle::Decoded object, DecodePickleAt(src, offset, options, kObjectRecord));
  ckpt.pickle_size = object.consumed;
  offset += object.consumed;
  ckpt.graph = std::move(object.graph);
  ckpt.root = object.root;
  ckpt.unsafe_globals = std::move(object.unsafe_globals);
  for (const pickle::Decoded* small : {&*magic, &protocol, &sys_info}) MergeLegacyUnsafe(ckpt.unsafe_globals, *small);
Result<Recognized> rec =
      RecognizeTensors(ckpt.graph, ckpt.root, RecognizeOptionsFor(Format::kTorchLegacy, options));
  if (!rec.ok()) {
    Status s = rec.status();
    return s.WithRecord(kObjectRecord);
  }
  ckpt.storages = std::move(rec->storages);
  ckpt.tensors = std::move(rec->tensors);

  // 5. The storage keys, then each storage's count and bytes in that order.
  uint64_t keys_offset = offset;
  ZF_ASSIGN_OR_RETURN(pickle::Decoded keys, DecodePickleAt(src, offset, options, kKeysRecord));
  offset += keys.consumed;
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> key_list, LegacyStorageKeys(keys, keys_offset));
  MergeLegacyUnsafe(ckpt.unsafe_globals, keys);
  std::unordered_map<std::string, uint32_t> by_key;
  for (uint32_t i = 0; i < ckpt.storages.size(); ++i) by_key.emplace(ckpt.storages[i].key, i);
  std::vector<bool> located(ckpt.storages.size(), false);
  for (const std::string& key : key_list) {
    std::string record = LegacyStorageRecord(key);
    ZF_ASSIGN_OR_RETURN(uint32_t index, LocateLegacyKey(by_key, located, key, offset));
    Storage& s = ckpt.storages[index];
    std::byte count_bytes[kLegacyCountSize];
    Status read = ReadExactAt(src, offset, count_bytes);
    if (!read.ok()) return read.WithRecord(record);
    uint64_t count = io::DecodeU64le(count_bytes);
    uint32_t itemsize = s.untyped ? 1 : Info(s.dtype).itemsize;
    uint64_t declared = s.nbytes / itemsize;
    if (count != declared)
      return Status::Corrupt("record " + record + " counts " + std::to_string(count) + " elements, storage declares " +
                             std::to_string(declared))
          .WithOffset(offset)
          .WithRecord(record);
    s.record = record;
    s.data_offset = offset + kLegacyCountSize;
    uint64_t available = s.data_offset <= src.size() ? src.size() - s.data_offset : 0;
    if (available < s.nbytes)
      return Status::Corrupt("record " + record + " has " + std::to_string(available) + " bytes, storage declares " +
                             std::to_string(s.nbytes))
          .WithOffset(s.data_offset)
          .WithRecord(record);
    s.record_size = s.nbytes;
    offset = s.data_offset + s.nbytes;
  }
  for (size_t i = 0; i < ckpt.storages.size(); ++i) {
    if (!located[i])
      return Status::Corrupt("storage '" + ckpt.storages[i].key +
                             "' is not in the storage key list, so the file holds no bytes for it")
          .WithOffset(keys_offset)
          .WithRecord(LegacyStorageRecord(ckpt.storages[i].key));
  }
  return ckpt;
}

}  // namespace zerofold::torch
