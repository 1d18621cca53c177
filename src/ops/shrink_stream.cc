// zerofold shrink in one forward pass: from a pipe or a .zst file, to any
// output. The model comes from data.pkl (or the legacy pickles), the plan is
// ShrinkFile's, and each output storage is cut from its input storage's
// record as the record streams by. The plan orders output storages by input
// record order and names them so that string order of the keys is that
// order (plan/shrink_plan.h), and the archive writer asks for them in key
// order: for torch's layout, the writer's requests follow the input.
#include <algorithm>
#include <string>
#include <vector>

#include "io/zstd_stream.h"
#include "ops/shrink.h"
#include "pickle/encoder.h"
#include "plan/shrink_plan.h"
#include "torch/archive_writer.h"
#include "torch/retarget.h"
#include "torch/stream_checkpoint.h"

namespace zerofold::ops {

namespace {

// Output storages of one input storage start in increasing order but may
// reach back a few bytes into the previous one: the planner rounds a
// cluster's start down to a multiple of its views' item sizes (at most 16).
// The last bytes of the record are kept to serve that.
constexpr size_t kKeptTail = 64;

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

Status BigEndian() {
  return Status::Unsupported("byteorder record says big-endian; only little-endian data is rewritten");
}

// Cuts output storages from the input storage records as they stream by.
class StorageCutter {
 public:
  StorageCutter(torch::StreamCheckpointReader* reader, const plan::ShrinkPlan& plan, size_t buffer_bytes,
                const ShrinkOptions& options)
      : reader_(reader), plan_(plan), options_(options), buffer_(std::max<size_t>(buffer_bytes, 4096)) {
    const torch::Checkpoint& ckpt = reader_->checkpoint();
    wanted_.assign(ckpt.storages.size(), false);
    for (const plan::OutputStorage& o : plan_.storages) wanted_[o.input_storage] = true;
  }

  // Emits the bytes of plan.storages[index].
  Status Fill(size_t index, const torch::EmitBytes& emit) {
    const plan::OutputStorage& o = plan_.storages[index];
    if (!current_ || *current_ != o.input_storage) ZF_TRY(MoveTo(o.input_storage));
    uint64_t pos = o.begin;
    if (pos < consumed_) {
      const uint64_t back = consumed_ - pos;
      if (back > tail_.size())
        return Status::Internal("output storage " + o.key + " begins " + std::to_string(back) +
                                " bytes before the bytes already passed, more than the " +
                                std::to_string(tail_.size()) + " kept");
      const uint64_t n = std::min(o.end, consumed_) - pos;
      const size_t from = tail_.size() - static_cast<size_t>(back);
      ZF_TRY(Emit(emit, std::span<const std::byte>(tail_).subspan(from, static_cast<size_t>(n))));
      pos += n;
    }
    while (consumed_ < pos) {  // skip to the start
      ZF_ASSIGN_OR_RETURN(size_t got, ReadRecord(std::min<uint64_t>(buffer_.size(), pos - consumed_)));
      (void)got;
    }
    while (pos < o.end) {
      ZF_ASSIGN_OR_RETURN(size_t got, ReadRecord(std::min<uint64_t>(buffer_.size(), o.end - pos)));
      ZF_TRY(Emit(emit, std::span<const std::byte>(buffer_.data(), got)));
      pos += got;
    }
    return Status::OK();
  }

 private:
  // Advances the reader to the record of input storage `want`, skipping
  // storages no output needs.
  Status MoveTo(uint32_t want) {
    const torch::Checkpoint& ckpt = reader_->checkpoint();
    while (true) {
      ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> next, reader_->NextStorage());
      if (ckpt.big_endian) return BigEndian();
      if (!next)  // NextStorage checks every storage had its record
        return Status::Internal("storage '" + ckpt.storages[want].key + "' was passed without being read");
      if (*next == want) break;
      if (wanted_[*next]) {
        const torch::Storage& s = ckpt.storages[*next];
        return Status::Unsupported("record " + s.record + " comes before " + ckpt.storages[want].record +
                                   ", but its bytes go after them in the output, whose storages are in string "
                                   "order of their keys; a single pass cannot reorder them: give the file's "
                                   "path instead")
            .WithRecord(s.record)
            .WithOffset(s.data_offset);
      }
    }
    current_ = want;
    consumed_ = 0;
    tail_.clear();
    return Status::OK();
  }

  // Reads up to n bytes of the current record into buffer_; fails at its end.
  Result<size_t> ReadRecord(uint64_t n) {
    ZF_ASSIGN_OR_RETURN(size_t got, reader_->Read(std::span<std::byte>(buffer_.data(), static_cast<size_t>(n))));
    if (got == 0)
      return Status::Internal("storage record ends before the planned bytes (" + std::to_string(consumed_) + ")");
    consumed_ += got;
    std::span<const std::byte> bytes(buffer_.data(), got);
    if (got >= kKeptTail) {
      tail_.assign(bytes.end() - kKeptTail, bytes.end());
    } else {
      tail_.insert(tail_.end(), bytes.begin(), bytes.end());
      if (tail_.size() > kKeptTail) tail_.erase(tail_.begin(), tail_.end() - kKeptTail);
    }
    return got;
  }

  Status Emit(const torch::EmitBytes& emit, std::span<const std::byte> bytes) {
    ZF_TRY(emit(bytes));
    done_ += bytes.size();
    if (options_.progress) options_.progress(done_, plan_.bytes_after);
    return Status::OK();
  }

  torch::StreamCheckpointReader* reader_;
  const plan::ShrinkPlan& plan_;
  const ShrinkOptions& options_;
  std::vector<std::byte> buffer_;
  std::vector<bool> wanted_;         // per input storage: an output storage needs it
  std::optional<uint32_t> current_;  // input storage being read
  uint64_t consumed_ = 0;            // its bytes read
  std::vector<std::byte> tail_;      // its last bytes read, at most kKeptTail
  uint64_t done_ = 0;                // bytes emitted in all
};

// The records after the storages, named relative to the top folder, as
// ShrinkFile carries them.
std::vector<torch::ExtraRecord> Extras(const torch::StreamCheckpointReader& reader) {
  const std::string& top = reader.checkpoint().top_folder;
  std::vector<torch::ExtraRecord> extras;
  for (const torch::OtherRecord& r : reader.other_records())
    extras.push_back({r.entry.name.substr(top.empty() ? 0 : top.size() + 1), r.bytes});
  return extras;
}

Result<ShrinkReport> Shrink(torch::StreamCheckpointReader& reader, Sink* sink, const std::string& input,
                            const std::string& output, const ShrinkOptions& options) {
  ZF_TRY(reader.ReadModel());
  torch::Checkpoint& ckpt = reader.checkpoint();

  ShrinkReport report;
  report.input = input;
  report.output = output;
  report.tensors = ckpt.tensors.size();
  for (const torch::Tensor& t : ckpt.tensors) report.tensor_nbytes.emplace_back(t.name, t.nbytes());
  report.storages_before = ckpt.storages.size();
  if (!ckpt.unsafe_globals.empty()) {
    if (!options.keep_unsafe)
      return Status::Unsafe("pickle references globals that would run code when torch.load reads it: " +
                            Join(ckpt.unsafe_globals, ", ") + " (--keep-unsafe carries them through unexecuted)");
    report.unsafe_globals = ckpt.unsafe_globals;
  }
  if (ckpt.big_endian) return BigEndian();
  if (ckpt.format == torch::Format::kTorchLegacy) {
    // As ShrinkFile: legacy pids have six items and zip archives need five;
    // only tensor pids are rebuilt, so a bare storage cannot be carried over.
    std::vector<bool> viewed(ckpt.storages.size(), false);
    for (const torch::Tensor& t : ckpt.tensors) viewed[t.storage] = true;
    for (size_t s = 0; s < ckpt.storages.size(); ++s)
      if (!viewed[s])
        return Status::Unsupported("legacy-format storage " + ckpt.storages[s].key +
                                   " is held by no tensor; only tensors' storages are rewritten")
            .WithRecord(ckpt.storages[s].record);
  }

  ZF_ASSIGN_OR_RETURN(plan::ShrinkPlan plan, plan::PlanShrink(ckpt));
  report.stored_before = plan.bytes_before;
  report.stored_after = plan.bytes_after;
  report.storages_after = plan.storages.size();
  for (uint32_t s : plan.changed_storages) {
    std::vector<std::string> parts;
    for (const plan::OutputStorage& o : plan.storages)
      if (o.input_storage == s) parts.push_back(std::to_string(o.nbytes()));
    report.changed_storages.push_back(ckpt.storages[s].key + ": " + std::to_string(ckpt.storages[s].nbytes) +
                                      " bytes -> " + (parts.empty() ? "none" : Join(parts, " + ")));
  }

  std::vector<torch::NewStorage> new_storages;
  std::vector<torch::StorageRecord> records;
  for (const plan::OutputStorage& o : plan.storages) {
    new_storages.push_back({o.key, o.nbytes(), o.input_storage});
    records.push_back({o.key, o.nbytes()});
  }
  std::vector<torch::NewPlacement> placements;
  for (const plan::ViewPlacement& v : plan.views) placements.push_back({v.output_storage, v.storage_offset});
  ZF_TRY(torch::RetargetTensors(ckpt, new_storages, placements));
  ZF_ASSIGN_OR_RETURN(std::vector<std::byte> pkl, pickle::Encode(ckpt.graph, ckpt.root));

  torch::ArchiveContents contents;
  contents.top_folder = ckpt.format == torch::Format::kTorchZip && !ckpt.top_folder.empty() ? ckpt.top_folder
                                                                                             : StemOf(output);
  contents.data_pkl = pkl;
  contents.storages = records;

  auto finish_input = [&]() -> Result<std::vector<torch::ExtraRecord>> {
    ZF_TRY(reader.Finish());
    if (ckpt.big_endian) return BigEndian();
    report.input_file_bytes = reader.position();
    return Extras(reader);
  };
  if (sink == nullptr) {  // dry run: the size needs the records after the storages
    ZF_ASSIGN_OR_RETURN(std::vector<torch::ExtraRecord> extras, finish_input());
    contents.extras = extras;
    report.output_file_bytes = torch::TorchArchiveSize(contents);
    return report;
  }
  StorageCutter cutter(&reader, plan, options.buffer_bytes, options);
  const uint64_t start = sink->position();
  ZF_TRY(torch::WriteTorchArchive(
      contents, [&](size_t index, const torch::EmitBytes& emit) { return cutter.Fill(index, emit); },
      finish_input, sink));
  report.output_file_bytes = sink->position() - start;
  return report;
}

}  // namespace

Result<ShrinkReport> ShrinkStreamTo(StreamSource* input, Sink* sink, const std::string& output,
                                    const ShrinkOptions& options) {
  torch::StreamCheckpointReader reader(input, options.read);
  Result<ShrinkReport> r = Shrink(reader, sink, input->name(), output, options);
  if (r.ok()) return r;
  // Errors without a path are the input's, whose offsets are stream offsets.
  Status s = r.status();
  if (s.path().empty()) s.WithPath(input->name());
  return io::NoteDecompressedOffset(std::move(s), *input);
}

Result<ShrinkReport> ShrinkStream(Env* env, const std::string& input, const std::string& output,
                                  const ShrinkOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<StreamSource> src, io::OpenNamedInput(env, input, options.zstd));
  std::unique_ptr<io::NamedOutput> out;
  if (!options.dry_run) {
    ZF_ASSIGN_OR_RETURN(out, io::OpenNamedOutput(env, output, options.zstd));
  }
  ZF_ASSIGN_OR_RETURN(ShrinkReport report, ShrinkStreamTo(src.get(), out ? out->sink() : nullptr, output, options));
  report.input = input;
  if (const auto* z = dynamic_cast<const io::ZstdSource*>(src.get())) report.input_file_bytes = z->compressed_position();
  if (out) {
    ZF_TRY(out->Commit());
    report.output_file_bytes = out->stored_bytes();
  }
  return report;
}

}  // namespace zerofold::ops
