#include "rewrite/dequantize.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>
#include <utility>

#include "json/reader.h"
#include "model/checkpoint_file.h"
#include "model/hf_folder.h"
#include "output/file_set.h"
#include "output/folder.h"
#include "output/sharding.h"
#include "quant/decode.h"
#include "safetensors/reader.h"
#include "safetensors/writer.h"
#include "gather/write.h"
#include "torch/archive_writer.h"
#include "torch/digest.h"
#include "torch/state_dict.h"

namespace zerofold::rewrite {

namespace {

using Emit = std::function<Status(std::span<const std::byte>)>;

constexpr const char* kConfigName = "config.json";
constexpr const char* kQuantizationKey = "quantization_config";

safetensors::Dtype TargetDtype(quant::Target t) {
  return t == quant::Target::kBFloat16 ? safetensors::Dtype::BF16 : safetensors::Dtype::F32;
}

// Makes the bytes of each output tensor, in bounded chunks.
class Producer {
 public:
  Producer(const std::vector<std::unique_ptr<RandomSource>>& sources, const std::vector<quant::SourceTensor>& tensors,
           const quant::Plan& plan, quant::Target target, size_t buffer_bytes)
      : sources_(sources), tensors_(tensors), plan_(plan), target_(target),
        buffer_(std::max<size_t>(buffer_bytes, 4096)) {}

  Status Produce(const quant::Plan::Item& item, const Emit& emit) {
    if (!item.group) return Kept(item.index, emit);
    const quant::Group& g = plan_.groups[item.index];
    return g.transpose ? Transposed(g, emit) : Rows(g, emit);
  }

 private:
  // [begin, end) of tensor t's bytes into buf.
  Status Read(uint32_t t, uint64_t begin, uint64_t end, std::vector<std::byte>& buf) {
    const quant::SourceTensor& st = tensors_[t];
    buf.resize(end - begin);
    Status s = ReadExactAt(*sources_[st.file], st.offset + begin, buf);
    if (!s.ok()) return s.WithRecord(st.name).WithPath(sources_[st.file]->name());
    return Status::OK();
  }

  Status Kept(uint32_t t, const Emit& emit) {
    const uint64_t n = tensors_[t].bytes;
    for (uint64_t pos = 0; pos < n;) {
      const uint64_t len = std::min<uint64_t>(buffer_, n - pos);
      ZF_TRY(Read(t, pos, pos + len, in_));
      ZF_TRY(emit(in_));
      pos += len;
    }
    return Status::OK();
  }

  // The chunk of rows [r0, r1): its bytes read into the buffers.
  Result<quant::Chunk> Load(const quant::Group& g, uint64_t r0, uint64_t r1) {
    const quant::SourceTensor* zero = g.zero_point ? &tensors_[*g.zero_point] : nullptr;
    const quant::ChunkRanges r = quant::RangesOf(g, tensors_[g.scale], zero, r0, r1);
    ZF_TRY(Read(g.weight, r.weight_begin, r.weight_end, in_));
    ZF_TRY(Read(g.scale, r.scale_begin, r.scale_end, scale_));
    if (zero != nullptr) ZF_TRY(Read(*g.zero_point, r.zero_begin, r.zero_end, zero_));
    quant::Chunk c;
    c.r0 = r0;
    c.r1 = r1;
    c.weight = in_;
    c.scale = scale_;
    c.scale_dtype = tensors_[g.scale].dtype;
    if (zero != nullptr) {
      c.zero = zero_;
      c.zero_dtype = zero->dtype;
    }
    if (g.global_scale) {
      std::vector<std::byte> global;
      ZF_TRY(Read(*g.global_scale, 0, 4, global));
      c.global = quant::ScaleAt(safetensors::Dtype::F32, global, 0);
    }
    return c;
  }

  Status Rows(const quant::Group& g, const Emit& emit) {
    const uint64_t row_in = quant::WeightRowBytes(g);
    const uint64_t row_out = g.cols * quant::TargetItemSize(target_);
    const uint64_t per_chunk = std::max<uint64_t>(1, buffer_ / std::max<uint64_t>({row_in, row_out, 1}));
    for (uint64_t r0 = 0; r0 < g.rows; r0 += per_chunk) {
      const uint64_t r1 = std::min(g.rows, r0 + per_chunk);
      ZF_ASSIGN_OR_RETURN(quant::Chunk chunk, Load(g, r0, r1));
      out_.resize((r1 - r0) * row_out);
      quant::DecodeRows(g, chunk, target_, out_);
      ZF_TRY(emit(out_));
    }
    return Status::OK();
  }

  // gpt-oss: per expert, its [N, K] values out as [K, N], a tile of output
  // rows (input columns) at a time. An expert whose packed values fit in
  // kSlabBuffers buffers is read once; a larger one is read again for each
  // tile, a chunk of rows at a time (memory stays a few buffers).
  Status Transposed(const quant::Group& g, const Emit& emit) {
    constexpr uint64_t kSlabBuffers = 4;
    const uint64_t n = g.rows / g.experts;
    const uint64_t row_in = quant::WeightRowBytes(g);
    const bool whole = n * row_in <= kSlabBuffers * buffer_;
    const uint64_t col_out = n * quant::TargetItemSize(target_);
    const uint64_t per_tile = std::max<uint64_t>(1, buffer_ / std::max<uint64_t>(col_out, 1));
    const uint64_t rows_per_read = whole ? n : std::max<uint64_t>(1, buffer_ / std::max<uint64_t>(row_in, 1));
    for (uint64_t e = 0; e < g.experts && n > 0; ++e) {
      quant::Chunk chunk;
      if (whole) {
        ZF_ASSIGN_OR_RETURN(chunk, Load(g, e * n, (e + 1) * n));
      }
      for (uint64_t c0 = 0; c0 < g.cols; c0 += per_tile) {
        const uint64_t c1 = std::min(g.cols, c0 + per_tile);
        out_.resize((c1 - c0) * col_out);
        for (uint64_t r0 = e * n; r0 < (e + 1) * n; r0 += rows_per_read) {
          if (!whole) {
            ZF_ASSIGN_OR_RETURN(chunk, Load(g, r0, std::min((e + 1) * n, r0 + rows_per_read)));
          }
          quant::DecodeColumns(g, chunk, c0, c1, n, e * n, target_, out_);
        }
        ZF_TRY(emit(out_));
      }
    }
    return Status::OK();
  }

  const std::vector<std::unique_ptr<RandomSource>>& sources_;
  const std::vector<quant::SourceTensor>& tensors_;
  const quant::Plan& plan_;
  quant::Target target_;
  size_t buffer_;
  std::vector<std::byte> in_, scale_, zero_, out_;
};

// One output tensor.
struct OutItem {
  quant::Plan::Item item;
  safetensors::TensorSpec spec;
};

// One output file: safetensors (layout; by_spec per TensorSpec) or a torch
// archive (pickle; by_spec per state dict entry, in name order).
struct OutFile {
  safetensors::Layout layout;
  torch::StateDictPickle pickle;
  std::string top_folder;
  std::vector<const OutItem*> by_spec;
};

// The torch archive of `items` (sorted by name, as torch.save of
// safetensors.torch.load_file's dict): its pickle and exact size.
Result<uint64_t> PlanTorch(std::vector<const OutItem*>& items, const std::string& path, OutFile& file) {
  std::sort(items.begin(), items.end(), [](const OutItem* a, const OutItem* b) { return a->spec.name < b->spec.name; });
  std::vector<torch::StateDictEntry> dict;
  for (const OutItem* it : items) {
    std::optional<torch::DType> dtype = safetensors::ToTorch(it->spec.dtype);
    std::optional<std::vector<int64_t>> shape = safetensors::TorchShape(it->spec.dtype, it->spec.shape);
    if (!dtype || !shape)
      return Status::Unsupported(std::string(safetensors::DtypeCode(it->spec.dtype)) + " tensors have no torch dtype")
          .WithRecord(it->spec.name);
    dict.push_back({it->spec.name, *dtype, std::move(*shape), dict.size()});
  }
  ZF_ASSIGN_OR_RETURN(file.pickle, torch::EncodeStateDict(dict));
  file.top_folder = gather::ArchiveStem(path);
  file.by_spec = items;
  torch::ArchiveContents contents;
  contents.top_folder = file.top_folder;
  contents.data_pkl = file.pickle.data_pkl;
  contents.storages = file.pickle.storages;
  return torch::TorchArchiveSize(contents);
}

// Compares the file `back` with the plan: the same tensors, each with the
// bytes a second production makes.
Status VerifyFile(const RandomSource& back, const OutFile& file, Producer& producer, size_t buffer_bytes,
                  ConvertReport& report) {
  Result<safetensors::File> read = safetensors::ReadHeader(back);
  if (!read.ok()) return Status(read.status()).WithPath(back.name());
  if (read->tensors.size() != file.layout.tensors.size())
    return Status::Corrupt("holds " + std::to_string(read->tensors.size()) + " tensors, not " +
                           std::to_string(file.layout.tensors.size()))
        .WithPath(back.name());
  std::vector<std::byte> got(std::max<size_t>(buffer_bytes, 4096));
  for (const safetensors::PlannedTensor& planned : file.layout.tensors) {
    const safetensors::TensorInfo* info = read->Find(planned.name);
    if (info == nullptr || info->dtype != planned.dtype || info->shape != planned.shape ||
        info->byte_size() != planned.size())
      return Status::Corrupt("tensor missing or of another dtype or shape in the file written")
          .WithRecord(planned.name)
          .WithPath(back.name());
    uint64_t pos = 0;
    ZF_TRY(producer.Produce(file.by_spec[planned.input_index]->item, [&](std::span<const std::byte> want) -> Status {
      if (pos + want.size() > info->byte_size())
        return Status::Corrupt("more bytes decoded than the file holds").WithRecord(planned.name).WithPath(back.name());
      got.resize(want.size());
      ZF_TRY(ReadExactAt(back, info->data_offset + pos, got));
      if (std::memcmp(got.data(), want.data(), want.size()) != 0)
        return Status::Corrupt("bytes differ from the input's decode near offset " +
                               std::to_string(info->data_offset + pos))
            .WithRecord(planned.name)
            .WithPath(back.name());
      pos += want.size();
      return Status::OK();
    }));
    report.verified_tensors++;
    report.verified_bytes += planned.size();
  }
  return Status::OK();
}

// Compares the torch file `back` with the plan: the same names, dtypes and
// shapes, and each tensor's xxh3-128 equal to that of a second production.
Status VerifyTorchFile(const RandomSource& back, const OutFile& file, Producer& producer,
                       const ConvertOptions& options, ConvertReport& report) {
  Result<model::CheckpointFile> written = model::ReadCheckpointFile(
      back, options.read, model::SafetensorsGraph::kSkip, model::TorchlessTensors::kAsBytes);
  if (!written.ok()) return Status(written.status()).WithPath(back.name());
  const std::vector<torch::Tensor>& tensors = written->ckpt.tensors;
  if (tensors.size() != file.by_spec.size())
    return Status::Corrupt("holds " + std::to_string(tensors.size()) + " tensors, not " +
                           std::to_string(file.by_spec.size()))
        .WithPath(back.name());
  std::map<std::string, const torch::Tensor*> by_name;
  for (const torch::Tensor& t : tensors) by_name.emplace(t.name, &t);
  std::vector<std::byte> buffer(std::max(options.buffer_bytes, torch::kMinDigestBuffer));
  for (const OutItem* it : file.by_spec) {
    auto found = by_name.find(it->spec.name);
    const std::optional<torch::DType> dtype = safetensors::ToTorch(it->spec.dtype);
    const std::optional<std::vector<int64_t>> shape = safetensors::TorchShape(it->spec.dtype, it->spec.shape);
    if (found == by_name.end() || found->second->dtype != dtype || found->second->shape != shape)
      return Status::Corrupt("tensor missing or of another dtype or shape in the file written")
          .WithRecord(it->spec.name)
          .WithPath(back.name());
    ZF_ASSIGN_OR_RETURN(torch::Hash128 got, torch::TensorDigest(back, written->ckpt, *found->second, buffer));
    torch::Xxh3Hasher want;
    ZF_TRY(producer.Produce(it->item, [&want](std::span<const std::byte> b) {
      want.Update(b);
      return Status::OK();
    }));
    if (want.Digest() != got)
      return Status::Corrupt("bytes differ from the input's decode").WithRecord(it->spec.name).WithPath(back.name());
    report.verified_tensors++;
    report.verified_bytes += it->spec.byte_size;
  }
  return Status::OK();
}

}  // namespace

Result<std::string> WithoutMember(const std::string& text, const std::string& key) {
  Result<json::Value> parsed = json::Parse(text);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->is_object()) return Status::Corrupt("is not a JSON object");
  const std::vector<json::Member>& members = parsed->members();
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].key != key) continue;
    const size_t begin = members[i].key_offset;
    if (i + 1 < members.size()) {
      // Up to the next member's key: the value, its comma and the space before the next key.
      return text.substr(0, begin) + text.substr(members[i + 1].key_offset);
    }
    // The last member: from the comma after the previous value (or the
    // object's start) to the space before the closing brace.
    size_t cut = begin;
    if (i > 0) {
      cut = text.rfind(',', begin);
    }
    size_t end = text.rfind('}');
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    if (i == 0) {
      // The only member: leave "{}" with the text's outer whitespace.
      return text.substr(0, begin) + text.substr(text.rfind('}'));
    }
    return text.substr(0, cut) + text.substr(end);
  }
  return text;
}

Result<std::optional<json::Value>> FolderQuantizationConfig(Env* env, const std::string& folder) {
  const std::string path = model::JoinPath(folder, kConfigName);
  if (!env->FileExists(path)) return std::optional<json::Value>();
  ZF_ASSIGN_OR_RETURN(std::string text, env->ReadSmallFile(path, uint64_t{64} << 20));
  Result<json::Value> config = json::Parse(text);
  if (!config.ok()) return Status(config.status()).WithPath(path);
  const json::Value* q = config->Find(kQuantizationKey);
  if (q == nullptr || q->is_null()) return std::optional<json::Value>();
  if (!q->is_object()) return Status::Corrupt(std::string(kQuantizationKey) + " is not an object").WithPath(path);
  return std::optional<json::Value>(*q);
}

Result<quant::Plan> PlanFiles(Env* env, const std::vector<std::string>& paths, const json::Value* config,
                              std::vector<quant::SourceTensor>* tensors) {
  std::unordered_set<std::string> seen;
  for (uint32_t f = 0; f < paths.size(); ++f) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(paths[f]));
    Result<safetensors::File> file = safetensors::ReadHeader(*src);
    if (!file.ok()) return Status(file.status()).WithPath(paths[f]);
    for (const safetensors::TensorInfo& info : file->tensors) {
      if (!seen.insert(info.name).second)
        return Status::InvalidArgument("tensor \"" + info.name + "\" is in two files").WithPath(paths[f]);
      quant::SourceTensor t{info.name, info.dtype, info.shape, f, info.data_offset, info.byte_size(), {}};
      if (quant::NeedsValues(t)) {
        std::vector<std::byte> bytes(t.bytes);
        Status s = ReadExactAt(*src, t.offset, bytes);
        if (!s.ok()) return s.WithRecord(t.name).WithPath(paths[f]);
        const uint64_t item = *quant::ScaleItemSize(t.dtype);
        for (uint64_t i = 0; i < t.bytes / item; ++i) t.values.push_back(quant::IntegerAt(t.dtype, bytes, i));
      }
      tensors->push_back(std::move(t));
    }
  }
  return quant::PlanDequantize(config, *tensors, paths);
}

Result<DequantizeReport> Dequantize(Env* env, const std::string& input, const std::string& output,
                                    const ConvertOptions& options, quant::Target target, output::ShardFormat format) {
  const bool to_torch = format == output::ShardFormat::kTorch;
  DequantizeReport result;
  ConvertReport& report = result.convert;
  const bool folder_input = env->IsDirectory(input);
  std::set<std::string> handled;
  std::vector<std::string> paths = {input};
  std::optional<json::Value> config;
  if (folder_input) {
    ZF_ASSIGN_OR_RETURN(paths, model::FolderCheckpoints(env, input, handled, model::ListOptions{options.read}));
    for (const std::string& p : paths)
      if (p.size() < 12 || p.compare(p.size() - 12, 12, ".safetensors") != 0)
        return Status::Unsupported("--dequantize reads safetensors checkpoints; this folder holds torch files").WithPath(p);
    ZF_ASSIGN_OR_RETURN(config, FolderQuantizationConfig(env, input));
  }
  std::vector<quant::SourceTensor> tensors;
  Result<quant::Plan> planned = PlanFiles(env, paths, config ? &*config : nullptr, &tensors);
  if (!planned.ok() && planned.status().path().empty())
    return Status(planned.status()).WithPath(model::JoinPath(input, kConfigName));
  ZF_ASSIGN_OR_RETURN(quant::Plan plan, std::move(planned));
  result.method = plan.method;
  result.schemes = plan.schemes;
  result.groups = plan.groups.size();
  result.kept = plan.items.size() - plan.groups.size();
  std::vector<std::unique_ptr<RandomSource>> sources;
  safetensors::Metadata metadata = {{"format", "pt"}};
  std::set<std::string> keys = {"format"};
  for (const std::string& p : paths) {
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(p));
    report.input_bytes += src->size();
    Result<safetensors::File> file = safetensors::ReadHeader(*src);
    if (!file.ok()) return Status(file.status()).WithPath(p);
    for (const auto& [k, v] : file->metadata)
      if (keys.insert(k).second) metadata.emplace_back(k, v);
    sources.push_back(std::move(src));
  }
  report.inputs = paths;

  // The output tensors, in input order.
  std::vector<OutItem> items;
  std::vector<output::ShardItem> shard_items;
  for (const quant::Plan::Item& it : plan.items) {
    OutItem o{it, {}};
    if (it.group) {
      const quant::Group& g = plan.groups[it.index];
      o.spec = {g.name, TargetDtype(target), g.shape, g.rows * g.cols * quant::TargetItemSize(target)};
    } else {
      const quant::SourceTensor& t = tensors[it.index];
      o.spec = {t.name, t.dtype, t.shape, t.bytes};
    }
    shard_items.push_back({o.spec.byte_size, static_cast<uint32_t>(items.size())});
    items.push_back(std::move(o));
  }
  if (items.empty()) return Status::InvalidArgument("holds no tensors").WithPath(input);
  const bool folder = options.folder;
  output::ShardPlan shards;
  if (folder) {
    shards = output::PlanShards(shard_items, options.max_shard_bytes);
  } else {
    shards.shards.emplace_back();
    for (uint32_t i = 0; i < items.size(); ++i) shards.shards[0].push_back(i);
  }
  const size_t n = shards.shards.size();
  std::vector<OutFile> files(n);
  std::vector<std::pair<std::string, std::string>> weight_map;
  uint64_t total = 0;
  for (size_t k = 0; k < n; ++k) {
    const std::string name = n == 1 ? output::SingleFileName(format) : output::ShardFileName(format, k + 1, n);
    const std::string path = folder ? model::JoinPath(output, name) : output;
    std::vector<safetensors::TensorSpec> specs;
    for (uint32_t i : shards.shards[k]) {
      specs.push_back(items[i].spec);
      files[k].by_spec.push_back(&items[i]);
      total += items[i].spec.byte_size;
      if (folder && n > 1) weight_map.emplace_back(items[i].spec.name, name);
    }
    if (to_torch) {
      Result<uint64_t> size = PlanTorch(files[k].by_spec, path, files[k]);
      if (!size.ok()) return Status(size.status()).WithPath(path);
      report.files.push_back({path, *size, specs.size()});
      continue;
    }
    Result<safetensors::Layout> layout = safetensors::PlanFile(specs, metadata);
    if (!layout.ok()) return Status(layout.status()).WithPath(path);
    report.files.push_back({path, layout->file_size, specs.size()});
    files[k].layout = std::move(layout).value();
  }
  report.total_size = total;

  output::FileSet set;
  set.out = output;
  set.folder = folder;
  set.format = format;
  set.inputs = paths;
  Producer producer(sources, tensors, plan, target, options.buffer_bytes);
  // What writing an item reads: each of its input tensors whole.
  auto AddReads = [&](const OutItem& o, io::ReadPlan& reads) {
    const quant::Plan::Item& it = o.item;
    std::vector<uint32_t> members = it.group ? plan.groups[it.index].members : std::vector<uint32_t>{it.index};
    for (uint32_t m : members) reads.Add(paths[tensors[m].file], tensors[m].offset, tensors[m].bytes);
  };
  for (size_t k = 0; k < n; ++k) {
    output::PlannedFile& f = set.files.emplace_back();
    const OutFile& p = files[k];
    f.path = report.files[k].path;
    f.bytes = report.files[k].bytes;
    for (const OutItem* it : p.by_spec) f.payload += it->spec.byte_size;
    if (to_torch) {
      f.write = [&producer, &p](Sink& sink, const output::WroteBytes& wrote) -> Status {
        torch::ArchiveContents contents;
        contents.top_folder = p.top_folder;
        contents.data_pkl = p.pickle.data_pkl;
        contents.storages = p.pickle.storages;
        auto fill = [&](size_t index, const torch::EmitBytes& emit) -> Status {
          return producer.Produce(p.by_spec[p.pickle.storage_entry[index]]->item, [&](std::span<const std::byte> b) {
            ZF_TRY(emit(b));
            wrote(b.size());
            return Status::OK();
          });
        };
        return torch::WriteTorchArchive(contents, fill, &sink);
      };
      f.verify = [&producer, &p, &report, &options](const RandomSource& back, const output::WroteBytes&) {
        return VerifyTorchFile(back, p, producer, options, report);
      };
      for (const OutItem* it : p.by_spec) AddReads(*it, f.reads);
      continue;
    }
    f.write = [&producer, &p](Sink& sink, const output::WroteBytes& wrote) -> Status {
      safetensors::StreamWriter writer(p.layout, sink);
      ZF_TRY(writer.WriteHeader());
      for (const safetensors::PlannedTensor& planned : p.layout.tensors) {
        ZF_TRY(writer.BeginTensor(planned.name));
        Status write_error;
        Status made = producer.Produce(p.by_spec[planned.input_index]->item, [&](std::span<const std::byte> b) {
          write_error = writer.Append(b);
          if (write_error.ok()) wrote(b.size());
          return write_error;
        });
        if (!write_error.ok()) return write_error;
        ZF_TRY(made);
      }
      return writer.Finish();
    };
    f.verify = [&producer, &p, &report, &options](const RandomSource& back, const output::WroteBytes&) {
      return VerifyFile(back, p, producer, options.buffer_bytes, report);
    };
    for (const safetensors::PlannedTensor& planned : p.layout.tensors) AddReads(*p.by_spec[planned.input_index], f.reads);
  }
  // A folder OUT from a folder IN: config.json without quantization_config,
  // written beside the weights; the other files copied.
  std::string config_text;
  if (folder && folder_input && input != output) {
    const std::string config_path = model::JoinPath(input, kConfigName);
    if (config) {
      ZF_ASSIGN_OR_RETURN(std::string text, env->ReadSmallFile(config_path, uint64_t{64} << 20));
      Result<std::string> cut = WithoutMember(text, kQuantizationKey);
      if (!cut.ok()) return Status(cut.status()).WithPath(config_path);
      config_text = std::move(*cut);
      handled.insert(kConfigName);
      output::PlannedFile& f = set.files.emplace_back();
      f.path = model::JoinPath(output, kConfigName);
      f.bytes = config_text.size();
      f.write = [&config_text](Sink& sink, const output::WroteBytes&) {
        return sink.Append(std::as_bytes(std::span(config_text)));
      };
      f.verify = [&config_text](const RandomSource& back, const output::WroteBytes&) -> Status {
        std::vector<std::byte> got(config_text.size());
        if (back.size() != got.size()) return Status::Corrupt("size differs from the config written").WithPath(back.name());
        ZF_TRY(ReadExactAt(back, 0, got));
        if (std::memcmp(got.data(), config_text.data(), got.size()) != 0)
          return Status::Corrupt("bytes differ from the config written").WithPath(back.name());
        return Status::OK();
      };
      set.inputs.push_back(config_path);
    }
    set.tail.copy_from = input;
    ZF_ASSIGN_OR_RETURN(std::vector<std::string> others, output::OtherFileNames(env, input, handled));
    std::erase_if(others, [](const std::string& name) {
      // ModelOpt's hf_quant_config.json: vLLM and TensorRT-LLM read it as
      // "this checkpoint is quantized" whatever config.json says.
      return name == "hf_quant_config.json" || output::IsSavedWeightsName(name, output::ShardFormat::kSafetensors) ||
             output::IsSavedWeightsName(name, output::ShardFormat::kTorch);
    });
    set.tail.copies = std::move(others);
  }
  if (folder && n > 1) {
    set.tail.index = model::JoinPath(output, output::IndexFileName(format));
    set.tail.index_text = output::IndexText(set.tail.index, total, weight_map);
  }
  ZF_TRY(WriteConvertFiles(env, set, options, report));
  if (!config_text.empty())
    report.copied.insert(report.copied.begin(), std::string(kConfigName) + " (without quantization_config)");
  return result;
}

}  // namespace zerofold::rewrite
