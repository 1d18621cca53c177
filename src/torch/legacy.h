// The legacy torch format: what torch < 1.6 writes, and torch.save(...,
// _use_new_zipfile_serialization=False) still does (torch/serialization.py
// _legacy_save). A sequence of pickles, then raw storages:
//   1. MAGIC_NUMBER, the int 0x1950a86a20f9469cfc6c
//   2. PROTOCOL_VERSION, 1001
//   3. sys_info, a dict (byte order, type sizes); torch ignores it, so do we
//   4. the object; storages appear as persistent ids
//      ('storage', torch.XStorage, key, location, numel, view_metadata)
//      with keys arbitrary decimal strings (memory addresses)
//   5. the list of storage keys
//   then per key, in that order: an int64 little-endian element count and
//   count x itemsize bytes.
// Each storage is recorded as "storage <key>" with data_offset at the first
// byte after its count.
#ifndef ZEROFOLD_TORCH_LEGACY_H_
#define ZEROFOLD_TORCH_LEGACY_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pickle/decoder.h"
#include "torch/checkpoint.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::torch {

// Reads a legacy file: decodes its pickles (reading only as much of the file
// as they take), recognizes the object's tensors and locates each storage by
// reading its 8-byte count, never its data. Does not check views against
// storages (ReadCheckpoint does). Errors name the pickle ("object pickle")
// or the storage record ("storage 94412") and the absolute offset:
// kCorrupt for a first pickle that is not the magic number, another
// protocol version, a key list that disagrees with the persistent ids, a
// count that disagrees with the declared numel, data past the end of file.
Result<Checkpoint> ReadLegacyCheckpoint(const RandomSource& src, const ReadOptions& options);

// Decodes the pickle starting at `offset`, reading the file in growing
// chunks until the pickle's STOP (at most options.max_pickle_bytes: kLimit
// beyond). Errors carry `record`.
Result<pickle::Decoded> DecodePickleAt(const RandomSource& src, uint64_t offset, const ReadOptions& options,
                                       std::string_view record);

// True for the decoder's error on a pickle cut short (more bytes may finish it).
bool IsTruncation(const Status& s);

// torch's legacy loader unpickles all five pickles with the full
// unpickler, each before it checks what it got: every pickle's unsafe
// globals are the file's (MergeLegacyUnsafe adds those of the four small
// ones to Checkpoint::unsafe_globals), and a pickle that fails its check
// after naming unsafe globals is kUnsafe naming its record (torch.load ran
// them before it failed), not kCorrupt.

// The first pickle's check: `magic` decoded to the legacy magic number.
// kIO passes through; any other failure is kCorrupt "not a torch file" at
// offset 0 (kUnsafe as above).
Status CheckLegacyMagic(const Result<pickle::Decoded>& magic);

// The second pickle's check: kCorrupt naming kProtocolRecord at `offset`
// unless it is the int kLegacyProtocolVersion (kUnsafe as above).
Status CheckLegacyProtocol(const pickle::Decoded& protocol, uint64_t offset);

// Adds `small`'s unsafe globals (magic, protocol, sys_info or key-list
// pickle) to `into`, without repeats.
void MergeLegacyUnsafe(std::vector<std::string>& into, const pickle::Decoded& small);

// Record names of the five pickles, for errors.
constexpr std::string_view kMagicRecord = "magic number pickle";
constexpr std::string_view kProtocolRecord = "protocol version pickle";
constexpr std::string_view kSysInfoRecord = "sys_info pickle";
constexpr std::string_view kObjectRecord = "object pickle";
constexpr std::string_view kKeysRecord = "storage key list pickle";

// The storage key list (pickle 5, decoded at `offset`) in file order, the
// order of the storages that follow; int keys (older torch) in decimal.
// kCorrupt naming kKeysRecord when it is not a list or tuple of str or int
// (kUnsafe as above).
Result<std::vector<std::string>> LegacyStorageKeys(const pickle::Decoded& keys, uint64_t offset);

// The index of `key`'s storage in `by_key` (key -> storage index), marking
// it in `located`. kCorrupt naming the storage record at `offset` when no
// persistent id declared the key or the list named it before.
Result<uint32_t> LocateLegacyKey(const std::unordered_map<std::string, uint32_t>& by_key, std::vector<bool>& located,
                                 const std::string& key, uint64_t offset);

// The record name of a legacy storage: "storage <key>".
std::string LegacyStorageRecord(std::string_view key);

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_LEGACY_H_
