#include "rewrite/to_safetensors.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gather/view_reader.h"
#include "json/writer.h"
#include "model/checkpoint_file.h"
#include "model/hf_folder.h"
#include "model/plain_values.h"
#include "output/file_set.h"
#include "output/folder.h"
#include "pickle/safety.h"
#include "safetensors/writer.h"
#include "rewrite/cast.h"
#include "rewrite/shrink.h"
#include "torch/cast.h"
#include "verify/verify.h"

namespace zerofold::rewrite {

namespace {

// One name to write.
struct Item {
  uint32_t input = 0;
  uint32_t tensor = 0;      // index into the input's tensors
  torch::DType out = torch::DType::kUInt8;
  safetensors::Dtype code = safetensors::Dtype::U8;
  std::vector<uint64_t> shape;  // safetensors::ShapeFromTorch
  uint64_t nbytes = 0;      // bytes in the file
  uint32_t group = 0;       // tie group, numbered across inputs
};

bool SameView(const torch::Tensor& a, const torch::Tensor& b) {
  return a.storage == b.storage && a.storage_offset == b.storage_offset && a.shape == b.shape &&
         a.stride == b.stride && a.dtype == b.dtype;
}

// {"k": "v", ...} in the given order.
Result<std::string> JsonObject(const std::vector<std::pair<std::string, std::string>>& pairs) {
  json::Writer w;
  w.BeginObject();
  for (const auto& [k, v] : pairs) {
    w.Key(k);
    w.String(v);
  }
  w.EndObject();
  return w.Finish();
}

// The files of an input folder that are neither `handled` nor weights of
// either format (the output replaces those), nor hidden: what a folder OUT
// gets copied.
Result<std::vector<std::string>> OtherFiles(Env* env, const std::string& input, const std::set<std::string>& handled) {
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> names, output::OtherFileNames(env, input, handled));
  std::erase_if(names, [](const std::string& name) {
    return output::IsSavedWeightsName(name, output::ShardFormat::kSafetensors) ||
           output::IsSavedWeightsName(name, output::ShardFormat::kTorch);
  });
  return names;
}

// The items of every input, in input then checkpoint order; names that
// --dedupe-tied drops go to `tied` as (dropped, kept) instead.
Status CollectItems(const std::vector<Input>& inputs, const ConvertOptions& options, std::vector<Item>& items,
                    std::vector<std::pair<std::string, std::string>>& tied) {
  std::unordered_map<std::string, uint32_t> owner;  // name -> input
  uint32_t group_base = 0;
  for (uint32_t i = 0; i < inputs.size(); ++i) {
    const torch::Checkpoint& ckpt = inputs[i].ckpt;
    Result<output::TieGroups> groups = output::FindTieGroups(ckpt);
    if (!groups.ok()) return Status(groups.status()).WithPath(inputs[i].path);
    std::vector<std::vector<uint32_t>> kept(groups->members.size());  // per group: tensors written
    for (uint32_t t = 0; t < ckpt.tensors.size(); ++t) {
      const torch::Tensor& tensor = ckpt.tensors[t];
      auto [it, fresh] = owner.emplace(tensor.name, i);
      if (!fresh)
        return Status::InvalidArgument("tensor \"" + tensor.name + "\" is in both " + inputs[it->second].path +
                                       " and " + inputs[i].path)
            .WithPath(inputs[i].path);
      const uint32_t g = groups->group_of[t];
      if (options.dedupe_tied) {
        auto same = std::find_if(kept[g].begin(), kept[g].end(),
                                 [&](uint32_t k) { return SameView(ckpt.tensors[k], tensor); });
        if (same != kept[g].end()) {
          tied.emplace_back(tensor.name, ckpt.tensors[*same].name);
          continue;
        }
      }
      kept[g].push_back(t);
      Status bad;
      Result<torch::DType> out = OutputDType(tensor.dtype, options.dtype);
      if (!out.ok()) bad = out.status();
      std::optional<safetensors::Dtype> code;
      if (bad.ok() && !tensor.quantized) code = safetensors::FromTorch(*out);
      if (bad.ok() && !code)
        bad = Status::Unsupported(std::string(tensor.quantized ? "quantized " : "") +
                                  std::string(torch::Info(*out).name) + " tensors have no safetensors dtype");
      std::optional<std::vector<uint64_t>> shape;
      // A tensor torch has no reading of keeps its own dtype and shape.
      auto bytes_of = std::find_if(inputs[i].torchless.begin(), inputs[i].torchless.end(),
                                   [&](const model::TorchlessTensor& x) { return x.name == tensor.name; });
      if (bad.ok() && bytes_of != inputs[i].torchless.end()) {
        code = bytes_of->dtype;
        shape = bytes_of->shape;
      } else if (bad.ok()) {
        shape = safetensors::ShapeFromTorch(*code, tensor.shape);
      }
      if (bad.ok() && !shape) bad = Status::Unsupported(safetensors::NoShapeReason(*code, tensor.shape));
      if (!bad.ok()) return bad.WithRecord(tensor.name).WithPath(inputs[i].path);
      items.push_back({i, t, *out, *code, std::move(*shape), OutputNbytes(tensor, *out), group_base + g});
    }
    group_base += static_cast<uint32_t>(groups->members.size());
  }
  return Status::OK();
}

// __metadata__ shared by every file: the format, then plain values.
safetensors::Metadata BaseMetadata(const std::vector<Input>& inputs, ConvertReport& report) {
  safetensors::Metadata metadata = {{kFormatMetadataKey, kFormatMetadataValue}};
  std::set<std::string> taken = {kFormatMetadataKey, kTiedMetadataKey};
  for (const Input& in : inputs) {
    // A safetensors input's own __metadata__ is carried, its format entry replaced.
    for (const auto& [key, text] : in.metadata)
      if (taken.insert(key).second) metadata.emplace_back(key, text);
    model::PlainValues values = model::CollectPlainValues(in.ckpt);
    for (auto& [key, text] : values.entries) {
      if (taken.insert(key).second) {
        metadata.emplace_back(key, std::move(text));
      } else {
        report.warnings.emplace_back(in.path, "value \"" + key + "\" not written: __metadata__ has that key already");
      }
    }
    for (const std::string& path : values.skipped)
      report.warnings.emplace_back(in.path, "value \"" + path + "\" not written: not plain data (safetensors keeps "
                                            "tensors, and plain values in __metadata__)");
  }
  return metadata;
}

// Writes and checks planned files: each tensor gathered (and cast) from its input.
class FileWriter {
 public:
  FileWriter(const std::vector<Input>& inputs, const ConvertOptions& options)
      : inputs_(inputs), options_(options), gatherer_(options.buffer_bytes),
        cast_(std::max<size_t>(options.buffer_bytes, 64) * 4) {}

  // Writes the file of `layout` into `sink`, reporting tensor bytes.
  Status Write(Sink& sink, const safetensors::Layout& layout, const std::vector<const Item*>& by_spec,
               const output::WroteBytes& wrote) {
    safetensors::StreamWriter writer(layout, sink);
    ZF_TRY(writer.WriteHeader());
    for (const safetensors::PlannedTensor& planned : layout.tensors)
      ZF_TRY(WriteTensor(writer, planned, *by_spec[planned.input_index], wrote));
    ZF_TRY(writer.Finish());
    return gatherer_.Finish();  // the deflated records' ends and CRC-32s
  }

  // Compares each tensor of the file `back` with its input's.
  Status Verify(const RandomSource& back, const safetensors::Layout& layout,
                const std::vector<const Item*>& by_spec, ConvertReport& report) {
    Result<model::CheckpointFile> written = model::ReadCheckpointFile(
        back, options_.read, model::SafetensorsGraph::kSkip, model::TorchlessTensors::kAsBytes);
    if (!written.ok()) return Status(written.status()).WithPath(back.name());
    const std::vector<torch::Tensor>& tensors = written->ckpt.tensors;  // in name order
    if (tensors.size() != layout.tensors.size())
      return Status::Corrupt("holds " + std::to_string(tensors.size()) + " tensors, not " +
                             std::to_string(layout.tensors.size()))
          .WithPath(back.name());
    std::vector<std::byte> buffer(std::max(options_.buffer_bytes, torch::kMinDigestBuffer));
    for (const safetensors::PlannedTensor& planned : layout.tensors) {
      auto y = std::lower_bound(tensors.begin(), tensors.end(), planned.name,
                                [](const torch::Tensor& t, const std::string& name) { return t.name < name; });
      if (y == tensors.end() || y->name != planned.name)
        return Status::Corrupt("tensor missing from the file written").WithRecord(planned.name).WithPath(back.name());
      const Item& item = *by_spec[planned.input_index];
      const Input& in = inputs_[item.input];
      ZF_TRY(verify::CompareTensorValues(*in.src, in.ckpt, in.ckpt.tensors[item.tensor], back, written->ckpt, *y, buffer));
      report.verified_tensors++;
      report.verified_bytes += y->nbytes();
    }
    return Status::OK();
  }

 private:
  Status WriteTensor(safetensors::StreamWriter& writer, const safetensors::PlannedTensor& planned, const Item& item,
                     const output::WroteBytes& wrote) {
    const Input& in = inputs_[item.input];
    const torch::Tensor& t = in.ckpt.tensors[item.tensor];
    const torch::Storage& storage = in.ckpt.storages[t.storage];
    ZF_TRY(writer.BeginTensor(planned.name));
    const bool cast = t.dtype != item.out;
    const torch::NanRule nan = torch::TorchNanRule(t.shape, t.stride);
    uint64_t element = 0;  // C-order index of the chunk's first element
    const size_t in_item = torch::Info(t.dtype).itemsize, out_item = torch::Info(item.out).itemsize;
    Status write_error;  // the output's, kept apart from read errors
    Status read = gatherer_.Gather(*in.src, storage, t, [&](std::span<const std::byte> chunk) -> Status {
      std::span<const std::byte> bytes = chunk;
      if (cast) {
        std::span<std::byte> out(cast_.data(), chunk.size() / in_item * out_item);
        ZF_TRY(torch::CastElements(t.dtype, item.out, chunk, out, nan, element));
        element += chunk.size() / in_item;
        bytes = out;
      }
      write_error = writer.Append(bytes);
      if (!write_error.ok()) return write_error;
      wrote(bytes.size());
      return Status::OK();
    });
    if (!write_error.ok()) return write_error;
    if (!read.ok()) return read.WithRecord(storage.record).WithPath(in.path);
    return Status::OK();
  }

  const std::vector<Input>& inputs_;
  const ConvertOptions& options_;
  gather::Gatherer gatherer_;
  std::vector<std::byte> cast_;  // cast output of one gather chunk (at most 4x its size)
};

}  // namespace

Result<ConvertReport> ConvertToSafetensors(Env* env, const std::string& input, const std::string& output,
                                           const ConvertOptions& options) {
  ConvertReport report;
  const bool folder_input = env->IsDirectory(input);
  std::set<std::string> handled;  // files of an input folder that are not copied
  std::vector<std::string> paths = {input};
  if (folder_input) {
    if (!options.select.empty())
      return Status::InvalidArgument("--select takes one checkpoint file, not a folder").WithPath(input);
    ZF_ASSIGN_OR_RETURN(paths, model::FolderCheckpoints(env, input, handled, model::ListOptions{options.read}));
  }
  const bool folder = options.folder;

  std::vector<Input> inputs;
  for (const std::string& p : paths) {
    ZF_ASSIGN_OR_RETURN(Input in, ReadInput(env, p, options, folder_input, model::TorchlessTensors::kAsBytes));
    report.inputs.push_back(p);
    report.input_bytes += in.src->size();
    if (!in.ckpt.unsafe_globals.empty()) {
      // Refused like every writing command (issue 27): a pipeline keys on
      // the exit code, not on a warning line.
      if (!options.keep_unsafe) return pickle::RefuseUnsafe(in.ckpt.unsafe_globals, pickle::kKeepDrops).WithPath(p);
      report.warnings.emplace_back(p, "pickle references unsafe globals: " + pickle::DescribeUnsafe(in.ckpt.unsafe_globals) +
                                          "; not executed, only tensors and plain values are written (--keep-unsafe)");
    }
    inputs.push_back(std::move(in));
  }
  if (folder_input && !options.only.empty() &&
      std::all_of(inputs.begin(), inputs.end(), [](const Input& in) { return in.ckpt.tensors.empty(); }))
    return Status::InvalidArgument("--only matches no tensor of the folder's checkpoints").WithPath(input);

  std::vector<Item> items;
  std::vector<std::pair<std::string, std::string>> tied;
  ZF_TRY(CollectItems(inputs, options, items, tied));
  output::ShardPlan plan;
  if (folder) {
    std::vector<output::ShardItem> sizes;
    for (const Item& it : items) sizes.push_back({it.nbytes, it.group});
    plan = output::PlanShards(sizes, options.max_shard_bytes);
  }
  if (plan.shards.empty()) {  // one file, also for a checkpoint without tensors
    plan.shards.assign(1, {});
    for (uint32_t i = 0; i < items.size(); ++i) plan.shards[0].push_back(i);
  }
  const size_t n = plan.shards.size();
  const safetensors::Metadata base = BaseMetadata(inputs, report);
  std::unordered_map<std::string, uint32_t> item_of_name;
  for (uint32_t i = 0; i < items.size(); ++i)
    item_of_name[inputs[items[i].input].ckpt.tensors[items[i].tensor].name] = i;

  uint64_t total = 0;
  for (const Item& it : items) total += it.nbytes;
  report.total_size = total;
  auto name_of = [&](size_t k) {
    return !folder ? std::string()
           : n == 1 ? output::SingleFileName(output::ShardFormat::kSafetensors)
                    : output::ShardFileName(output::ShardFormat::kSafetensors, k + 1, n);
  };
  auto path_of = [&](size_t k) { return folder ? model::JoinPath(output, name_of(k)) : output; };
  // Every file is planned (header and exact size) before any is written:
  // each --part computes the same plan and writes only its own files.
  struct PlannedFile {
    safetensors::Layout layout;
    std::vector<const Item*> by_spec;
  };
  std::vector<PlannedFile> planned;
  std::vector<std::pair<std::string, std::string>> weight_map;
  for (size_t k = 0; k < n; ++k) {
    const std::string name = name_of(k);
    const std::string path = path_of(k);
    std::vector<safetensors::TensorSpec> specs;
    PlannedFile file;
    std::set<uint32_t> in_file;
    for (uint32_t i : plan.shards[k]) {
      const Item& it = items[i];
      const torch::Tensor& t = inputs[it.input].ckpt.tensors[it.tensor];
      specs.push_back({t.name, it.code, it.shape, it.nbytes});
      file.by_spec.push_back(&it);
      in_file.insert(i);
      if (folder && n > 1) weight_map.emplace_back(t.name, name);
    }
    safetensors::Metadata metadata = base;
    std::vector<std::pair<std::string, std::string>> tied_here;
    for (const auto& pair : tied)
      if (in_file.count(item_of_name.at(pair.second))) tied_here.push_back(pair);
    if (!tied_here.empty()) {
      ZF_ASSIGN_OR_RETURN(std::string text, JsonObject(tied_here));
      metadata.emplace_back(kTiedMetadataKey, std::move(text));
    }
    Result<safetensors::Layout> layout = safetensors::PlanFile(specs, metadata);
    if (!layout.ok()) {
      // What the format cannot hold (a name that is not UTF-8, a header over
      // the reference's limit) is a property of the input, not a bad argument.
      Status s = layout.status().code() == Code::kInvalidArgument ? Status::Unsupported(layout.status().message())
                                                                   : layout.status();
      return s.WithPath(path);
    }
    report.files.push_back({path, layout->file_size, specs.size()});
    file.layout = std::move(layout).value();
    planned.push_back(std::move(file));
  }

  // What a folder OUT gets after the weights: the copies and the index (as
  // save_pretrained writes them).
  output::FileSet set;
  set.out = output;
  set.folder = folder;
  set.format = output::ShardFormat::kSafetensors;
  set.inputs = paths;
  if (folder) {
    if (folder_input && input != output) {
      set.tail.copy_from = input;
      ZF_ASSIGN_OR_RETURN(set.tail.copies, OtherFiles(env, input, handled));
    }
    if (n > 1) {
      set.tail.index = model::JoinPath(output, output::IndexFileName(output::ShardFormat::kSafetensors));
      set.tail.index_text = output::IndexText(set.tail.index, total, weight_map);
    }
  }
  FileWriter writer(inputs, options);
  for (size_t k = 0; k < n; ++k) {
    output::PlannedFile& f = set.files.emplace_back();
    const PlannedFile& p = planned[k];
    f.path = report.files[k].path;
    f.bytes = report.files[k].bytes;
    for (const Item* it : p.by_spec) f.payload += it->nbytes;
    f.write = [&writer, &p](Sink& sink, const output::WroteBytes& wrote) {
      return writer.Write(sink, p.layout, p.by_spec, wrote);
    };
    f.verify = [&writer, &p, &report](const RandomSource& back, const output::WroteBytes&) {
      return writer.Verify(back, p.layout, p.by_spec, report);
    };
    for (const safetensors::PlannedTensor& planned_tensor : p.layout.tensors) {
      const Item& item = *p.by_spec[planned_tensor.input_index];
      const Input& in = inputs[item.input];
      const torch::Tensor& t = in.ckpt.tensors[item.tensor];
      gather::AddViewReads(in.ckpt.storages[t.storage], t, in.path, &f.reads);
    }
  }
  ZF_TRY(WriteConvertFiles(env, set, options, report));
  return report;
}

}  // namespace zerofold::rewrite
