// zerofold shrink in one forward pass: from a pipe or a .zst file, to any
// output. The model comes from data.pkl (or the legacy pickles), the plan is
// ShrinkFile's, and each output storage is cut from its input storage's
// record as the record streams by. The plan orders output storages by input
// record order and names them so that string order of the keys is that
// order (plan/shrink_plan.h), and the archive writer asks for them in key
// order: for torch's layout, the writer's requests follow the input.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/zstd_stream.h"
#include "output/file_set.h"
#include "plan/shrink_plan.h"
#include "rewrite/cast.h"
#include "rewrite/prepare.h"
#include "rewrite/shrink.h"

#include "output/file_set.h"
#include "torch/archive_writer.h"
#include "torch/stream_checkpoint.h"

namespace zerofold::rewrite {

namespace {

// Output storages of one input storage start in increasing order but may
// reach back a few bytes into the previous one: the planner rounds a
// cluster's start down to a multiple of its views' item sizes (at most 16).
// The last bytes of the record are kept to serve that.
constexpr size_t kKeptTail = 64;

constexpr uint32_t kNotPlanned = UINT32_MAX;

// A big-endian archive passes through a stream only as a plain shrink,
// which keeps its bytes and byteorder record; anything else reads values
// (torch/storage_source.h), which only the file form swaps.
Status BigEndian() {
  return Status::Unsupported(
      "byteorder record says big-endian; from a stream only a plain shrink takes it (save it to a file first)");
}

// Cuts output storages from the input storage records as they stream by.
// Storages are indexed as in the planned checkpoint, which may be a subtree
// of the reader's (--select): storages are matched by key.
class StorageCutter {
 public:
  StorageCutter(torch::StreamCheckpointReader* reader, const std::string& input_name,
                const torch::Checkpoint& planned, const PreparedShrink& prep, const ShrinkOptions& options)
      : reader_(reader),
        input_name_(input_name),
        planned_(planned),
        prep_(prep),
        options_(options),
        buffer_(std::max<size_t>(options.buffer_bytes, 4096)),
        copier_(std::max<size_t>(options.buffer_bytes, 4096)),
        source_(this) {
    std::unordered_map<std::string_view, uint32_t> by_key;
    for (uint32_t i = 0; i < planned_.storages.size(); ++i) by_key.emplace(planned_.storages[i].key, i);
    for (const torch::Storage& s : reader_->checkpoint().storages) {
      auto it = by_key.find(s.key);
      planned_index_.push_back(it == by_key.end() ? kNotPlanned : it->second);
    }
    wanted_.assign(planned_.storages.size(), false);
    for (const plan::OutputStorage& o : prep_.plan.storages) wanted_[o.input_storage] = true;
  }

  // Emits the bytes of output storage `index`, cast as planned.
  Status Fill(size_t index, const torch::EmitBytes& emit) {
    const plan::OutputStorage& o = prep_.plan.storages[index];
    const StorageCast& cast = prep_.casts[index];
    if (!current_ || *current_ != o.input_storage) ZF_TRY(MoveTo(o.input_storage));
    auto counted = [&](std::span<const std::byte> bytes) -> Status {
      ZF_TRY(emit(bytes));
      done_ += bytes.size();
      if (options_.progress) options_.progress({0, 1, done_, prep_.report.stored_after});
      return Status::OK();
    };
    uint64_t pos = o.begin;
    if (pos < consumed_) {
      const uint64_t back = consumed_ - pos;
      // A cast storage has views of one dtype and starts on an element: it
      // never reaches back.
      if (back > tail_.size() || cast.cast())
        return Status::Internal("output storage " + o.key + " begins " + std::to_string(back) +
                                " bytes before the bytes already passed, more than the " +
                                std::to_string(tail_.size()) + " kept");
      const uint64_t n = std::min(o.end, consumed_) - pos;
      const size_t from = tail_.size() - static_cast<size_t>(back);
      ZF_TRY(counted(std::span<const std::byte>(tail_).subspan(from, static_cast<size_t>(n))));
      pos += n;
    }
    while (consumed_ < pos) {  // skip to the start
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer_.size(), pos - consumed_));
      ZF_TRY(ReadInto(std::span<std::byte>(buffer_.data(), n)));
    }
    if (cast.cast())
      return copier_.Copy(source_, pos, o.end - pos, cast, planned_.storages[o.input_storage].record, counted);
    while (pos < o.end) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer_.size(), o.end - pos));
      std::span<std::byte> bytes(buffer_.data(), n);
      ZF_TRY(ReadInto(bytes));
      ZF_TRY(counted(bytes));
      pos += n;
    }
    return Status::OK();
  }

 private:
  // The current record seen as a RandomSource, for CastCopier: it reads
  // forward only, each read where the last one ended.
  class RecordSource final : public RandomSource {
   public:
    explicit RecordSource(StorageCutter* cutter) : cutter_(cutter) {}
    Result<size_t> ReadAt(uint64_t offset, std::span<std::byte> dst) const override {
      if (offset != cutter_->consumed_)
        return Status::Internal("a cast read at " + std::to_string(offset) + " of a record streamed to " +
                                std::to_string(cutter_->consumed_));
      ZF_TRY(cutter_->ReadInto(dst));
      return dst.size();
    }
    uint64_t size() const override { return UINT64_MAX; }
    const std::string& name() const override { return cutter_->input_name_; }

   private:
    StorageCutter* cutter_;
  };

  // Advances the reader to the record of planned storage `want`, skipping
  // storages no output needs.
  Status MoveTo(uint32_t want) {
    while (true) {
      ZF_ASSIGN_OR_RETURN(std::optional<uint32_t> next, reader_->NextStorage());
      if (reader_->checkpoint().big_endian && !IsPlainShrink(options_)) return BigEndian();
      if (!next)  // NextStorage checks every storage had its record
        return Status::Internal("storage '" + planned_.storages[want].key + "' was passed without being read");
      const uint32_t p = planned_index_[*next];
      if (p == want) break;
      if (p != kNotPlanned && wanted_[p]) {
        const torch::Storage& s = reader_->checkpoint().storages[*next];
        return Status::Unsupported("record " + s.record + " comes before " + planned_.storages[want].record +
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

  // Fills dst with the next bytes of the current record; kInternal at its end.
  Status ReadInto(std::span<std::byte> dst) {
    for (size_t filled = 0; filled < dst.size();) {
      ZF_ASSIGN_OR_RETURN(size_t got, reader_->Read(dst.subspan(filled)));
      if (got == 0)
        return Status::Internal("storage record ends before the planned bytes (" + std::to_string(consumed_) + ")");
      filled += got;
      consumed_ += got;
    }
    if (dst.size() >= kKeptTail) {
      tail_.assign(dst.end() - kKeptTail, dst.end());
    } else {
      tail_.insert(tail_.end(), dst.begin(), dst.end());
      if (tail_.size() > kKeptTail) tail_.erase(tail_.begin(), tail_.end() - kKeptTail);
    }
    return Status::OK();
  }

  torch::StreamCheckpointReader* reader_;
  const std::string& input_name_;
  const torch::Checkpoint& planned_;
  const PreparedShrink& prep_;
  const ShrinkOptions& options_;
  std::vector<std::byte> buffer_;
  CastCopier copier_;
  RecordSource source_;
  std::vector<uint32_t> planned_index_;  // per reader storage: its planned index, or kNotPlanned
  std::vector<bool> wanted_;             // per planned storage: an output storage needs it
  std::optional<uint32_t> current_;      // planned storage being read
  uint64_t consumed_ = 0;                // its bytes read
  std::vector<std::byte> tail_;          // its last bytes read, at most kKeptTail
  uint64_t done_ = 0;                    // bytes emitted in all
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

// The input as the reader pulls it from its source: every byte is kept
// until Keep(false), or passed on to a sink from Tee() on, so that an input
// that is not worth rewriting can be written out unchanged in the same pass.
class TeeSource final : public StreamSource {
 public:
  explicit TeeSource(StreamSource* src) : src_(src) {}

  Result<size_t> Read(std::span<std::byte> dst) override {
    ZF_ASSIGN_OR_RETURN(size_t got, src_->Read(dst));
    std::span<const std::byte> bytes = dst.first(got);
    if (sink_ != nullptr) {
      ZF_TRY(sink_->Append(bytes));
    } else if (keep_) {
      kept_.insert(kept_.end(), bytes.begin(), bytes.end());
    }
    return got;
  }
  uint64_t position() const override { return src_->position(); }
  const std::string& name() const override { return src_->name(); }

  // Stops keeping bytes and drops those kept.
  void Drop() {
    keep_ = false;
    std::vector<std::byte>().swap(kept_);
  }
  // Writes the bytes kept to sink, then every byte read from now on.
  Status Tee(Sink* sink) {
    ZF_TRY(sink->Append(kept_));
    Drop();
    sink_ = sink;
    return Status::OK();
  }
  // Reads (and so passes on) the rest of the source.
  Status Drain() {
    std::vector<std::byte> scratch(size_t{1} << 16);
    while (true) {
      ZF_ASSIGN_OR_RETURN(size_t got, Read(scratch));
      if (got == 0) return Status::OK();
    }
  }

 private:
  StreamSource* src_;
  bool keep_ = true;
  std::vector<std::byte> kept_;
  Sink* sink_ = nullptr;
};

// Whether a plain shrink's rewrite is smaller than its input, decided when
// the model is read, before any storage byte: a single pass has to choose
// then between rewriting and passing the input through. Legacy input: its
// size is known from the key list (each storage's count and bytes follow),
// the rewrite's exactly. Zip input: both are sized as torch lays archives
// out, with the records met so far besides data.pkl and the storages (a
// "version" record if none); for an archive torch wrote, whose records
// after the storages are that version record, this is the file form's
// decision. Records after the storages that the pass has not met yet are
// taken to cost as much in the rewrite as in the input.
bool RewriteIsSmaller(const torch::StreamCheckpointReader& reader, const torch::ArchiveContents& rewrite) {
  const torch::Checkpoint& ckpt = reader.checkpoint();
  if (ckpt.format == torch::Format::kTorchLegacy) {
    uint64_t input_bytes = reader.position();
    for (const torch::Storage& s : ckpt.storages) input_bytes = std::max(input_bytes, s.data_offset + s.nbytes);
    return torch::TorchArchiveSize(rewrite) < input_bytes;
  }
  std::vector<torch::StorageRecord> storages;
  for (const torch::Storage& s : ckpt.storages) storages.push_back({s.key, s.nbytes});
  torch::ArchiveContents input = rewrite;
  input.top_folder = ckpt.top_folder;
  input.storages = storages;
  return torch::TorchArchiveSize(rewrite) < torch::TorchArchiveSize(input, ckpt.pickle_size);
}

Result<ShrinkReport> Shrink(torch::StreamCheckpointReader& reader, TeeSource& tee, Sink* sink,
                            const std::string& input, const std::string& output, const ShrinkOptions& options) {
  ZF_TRY(reader.ReadModel());
  // --select and --only renumber storages: plan on a copy, so the reader keeps its own.
  std::optional<torch::Checkpoint> selected;
  if (!options.select.empty() || !options.only.empty()) selected = reader.checkpoint();
  torch::Checkpoint& ckpt = selected ? *selected : reader.checkpoint();
  ZF_ASSIGN_OR_RETURN(PreparedShrink prep, PrepareShrink(ckpt, input, output, options));
  ShrinkReport& report = prep.report;

  torch::ArchiveContents contents;
  contents.top_folder = prep.top_folder;
  contents.data_pkl = prep.data_pkl;
  contents.storages = prep.records;
  auto finish_input = [&]() -> Result<std::vector<torch::ExtraRecord>> {
    ZF_TRY(reader.Finish());
    if (reader.checkpoint().big_endian && !IsPlainShrink(options)) return BigEndian();
    report.input_file_bytes = reader.position();
    return Extras(reader);
  };
  const std::vector<torch::ExtraRecord> met = Extras(reader);
  contents.extras = met;
  // A deflated input (by the records met so far) is always rewritten
  // stored: its size is not known before its storages pass (the file form
  // measures it and copies it unchanged when the rewrite is not smaller).
  if (IsPlainShrink(options) && reader.checkpoint().deflated_records == 0 && !RewriteIsSmaller(reader, contents)) {
    // Already compact: the input passes through unchanged (checked by the
    // reader as it goes).
    report.copied_unchanged = true;
    report.stored_after = report.stored_before;
    report.storages_after = report.storages_before;
    report.changed_storages.clear();
    if (sink != nullptr) ZF_TRY(tee.Tee(sink));
    ZF_TRY(finish_input().status());
    ZF_TRY(tee.Drain());
    report.input_file_bytes = report.output_file_bytes = tee.position();
    return report;
  }
  tee.Drop();
  if (sink == nullptr) {  // dry run: the size needs the records after the storages
    ZF_ASSIGN_OR_RETURN(std::vector<torch::ExtraRecord> extras, finish_input());
    contents.extras = extras;
    report.output_file_bytes = torch::TorchArchiveSize(contents);
    return report;
  }
  StorageCutter cutter(&reader, input, ckpt, prep, options);
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
  // One pass leaves nothing to compare the output with.
  if (options.verify)
    return Status::InvalidArgument("--verify reads the input again; '" + input->name() + "' is a stream");
  TeeSource tee(input);
  torch::StreamCheckpointReader reader(&tee, options.read);
  Result<ShrinkReport> r = Shrink(reader, tee, sink, input->name(), output, options);
  if (r.ok()) return r;
  // Errors without a path are the input's, whose offsets are stream offsets.
  Status s = r.status();
  if (s.path().empty()) s.WithPath(input->name());
  return io::NoteDecompressedOffset(std::move(s), *input);
}

Result<ShrinkReport> ShrinkStream(Env* env, const std::string& input, const std::string& output,
                                  const ShrinkOptions& options) {
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<StreamSource> src, io::OpenNamedInput(env, input, options.zstd));
  ShrinkReport report;
  if (options.dry_run) {
    ZF_ASSIGN_OR_RETURN(report, ShrinkStreamTo(src.get(), nullptr, output, options));
  } else {
    // One file through the one protocol (output/file_set.h), written as the
    // input is read: its size is known only at the end.
    output::FileSet set;
    set.out = output;
    set.inputs = {input};
    output::PlannedFile& file = set.files.emplace_back();
    file.path = output;
    file.write = [&](Sink& sink, const output::WroteBytes&) -> Status {
      ZF_ASSIGN_OR_RETURN(report, ShrinkStreamTo(src.get(), &sink, output, options));
      return Status::OK();
    };
    output::FileSetOptions writing = output::FileSetOptionsOf(options);
    writing.force = true;  // the request refused an OUT that exists (output/target.h)
    writing.zstd = options.zstd;
    ZF_ASSIGN_OR_RETURN(output::FileSetReport written, output::WriteFileSet(env, set, writing));
    report.output_file_bytes = written.stored_bytes[0];
  }
  report.input = input;
  if (const auto* z = dynamic_cast<const io::ZstdSource*>(src.get())) report.input_file_bytes = z->compressed_position();
  return report;
}

}  // namespace zerofold::rewrite
