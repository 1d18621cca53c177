#include "plan/split_cost.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "pickle/encoder.h"
#include "zip/format.h"
#include "zip/torch_layout.h"

namespace zerofold::plan {

namespace {

constexpr uint64_t kShortMemoOpSize = 1 + 1;  // pickletools: BINPUT, BINGET
constexpr uint64_t kLongMemoOpSize = 1 + 4;   // LONG_BINPUT, LONG_BINGET
constexpr uint64_t kShortMemoIndexes = 256;
constexpr uint64_t kBinUnicodeHeadSize = 1 + 4;  // pickletools: BINUNICODE
// The zip64 extra block at its largest: header, sizes, offset.
constexpr uint64_t kMaxZip64BlockSize = zip::kExtraFieldHeaderSize + 8 + 8 + 8;

size_t Digits(uint64_t v) { return std::to_string(v).size(); }

struct RunRecord {
  size_t name_size;
  uint64_t size;
};

// Bytes the records take, written from the 64-aligned offset `base`, up to
// the data of a record after them whose name has next_name_size bytes (its
// local header and padding included), plus their central-directory entries.
uint64_t RunBytes(uint64_t base, std::span<const RunRecord> records, size_t next_name_size) {
  uint64_t pos = base, central = 0;
  for (const RunRecord& r : records) {
    zip::EntryLayout l = zip::LayOutEntry(pos, r.name_size, r.size);
    central += l.central_header_size();
    pos = l.end_offset();
  }
  return zip::LayOutEntry(pos, next_name_size, 0).data_offset() - base + central;
}

}  // namespace

SplitCost::SplitCost(const torch::Checkpoint& ckpt, std::string record_prefix)
    : ckpt_(ckpt),
      prefix_(std::move(record_prefix)),
      memo_op_size_(ckpt.graph.size() < kShortMemoIndexes ? kShortMemoOpSize : kLongMemoOpSize) {}

int64_t SplitCost::Delta(uint32_t s, std::span<const Part> parts, std::span<const PartView> views) const {
  const torch::Storage& storage = ckpt_.storages[s];
  const size_t k = parts.size();
  // Keys as plan::AssignKeys names them: KEY, or KEY.0 .. KEY.(k-1)
  // zero-padded; legacy input is renumbered, every key as wide.
  const bool legacy = ckpt_.format == torch::Format::kTorchLegacy;
  const size_t whole_key = legacy ? Digits(ckpt_.storages.empty() ? 0 : ckpt_.storages.size() - 1) : storage.key.size();
  const size_t part_key = legacy || k == 1 ? whole_key : whole_key + 1 + Digits(k - 1);

  // Zip records.
  const uint64_t base = storage.data_offset / zip::kTorchDataAlignment * zip::kTorchDataAlignment;
  const size_t next_name = prefix_.size() + whole_key;
  const RunRecord whole_run[] = {{prefix_.size() + whole_key, storage.nbytes}};
  std::vector<RunRecord> part_run;
  for (const Part& p : parts) part_run.push_back({prefix_.size() + part_key, p.end - p.begin});
  int64_t delta = static_cast<int64_t>(RunBytes(base, part_run, next_name)) -
                  static_cast<int64_t>(RunBytes(base, whole_run, next_name));

  // Key strings: one per part instead of one, each written once (BINUNICODE
  // and its BINPUT); every other pid naming it fetches it (BINGET), so k
  // parts fetch k - 1 times less.
  const int64_t key_string = static_cast<int64_t>(kBinUnicodeHeadSize + memo_op_size_);
  delta += static_cast<int64_t>(k) * (key_string + static_cast<int64_t>(part_key)) -
           (key_string + static_cast<int64_t>(whole_key));
  delta -= static_cast<int64_t>(k - 1) * static_cast<int64_t>(memo_op_size_);

  // Each rebuild call (tied names share one) has its pid's numel and its
  // storage offset as ints.
  const uint64_t unit = storage.untyped ? 1 : torch::Info(storage.dtype).itemsize;
  std::set<pickle::NodeId> seen;
  for (const PartView& v : views) {
    const torch::Tensor& t = ckpt_.tensors[v.tensor];
    if (!seen.insert(t.args).second) continue;
    const Part& p = parts[v.part];
    delta += static_cast<int64_t>(pickle::IntOpSize(static_cast<int64_t>((p.end - p.begin) / unit))) -
             static_cast<int64_t>(pickle::IntOpSize(static_cast<int64_t>(storage.nbytes / unit)));
    delta += static_cast<int64_t>(pickle::IntOpSize(v.storage_offset)) -
             static_cast<int64_t>(pickle::IntOpSize(t.storage_offset));
  }
  return delta;
}

uint64_t SplitCost::RecordOverheadBound(size_t key_size) const {
  const uint64_t name = prefix_.size() + key_size;
  return zip::kLocalFileHeaderSize + name + kMaxZip64BlockSize + zip::kExtraFieldHeaderSize +
         (zip::kTorchDataAlignment - 1) + zip::kZip64DataDescriptorSize + zip::kCentralFileHeaderSize + name +
         kMaxZip64BlockSize + kBinUnicodeHeadSize + key_size + kLongMemoOpSize;
}

}  // namespace zerofold::plan
