#include "dcp/hf_form.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "json/reader.h"
#include "model/hf_folder.h"
#include "safetensors/reader.h"

namespace zerofold::dcp {

namespace {

// _hf_utils.py: SHARDED_FILE_NAME, SUFFIX, CUSTOM_METADATA_KEY, SAVED_OFFSETS_KEY.
constexpr std::string_view kShardPrefix = "shard-";
constexpr std::string_view kShardInfix = "-model-";
constexpr std::string_view kSuffix = ".safetensors";
constexpr std::string_view kShardingInfoKey = "DCP_SHARDING_INFO";
constexpr std::string_view kSavedOffsetsKey = "saved_offsets";

}  // namespace

bool IsHfShardName(std::string_view name) {
  return name.size() > kShardPrefix.size() + kSuffix.size() && name.substr(0, kShardPrefix.size()) == kShardPrefix &&
         name.substr(name.size() - kSuffix.size()) == kSuffix && name.find(kShardInfix) != std::string_view::npos;
}

std::vector<std::string> HfShardFiles(Env* env, const std::string& dir) {
  std::vector<std::string> out;
  Result<std::vector<DirEntry>> entries = env->ListDir(dir);
  if (!entries.ok()) return out;
  for (const DirEntry& e : *entries)
    if (!e.is_dir && IsHfShardName(e.name)) out.push_back(e.name);
  std::sort(out.begin(), out.end());
  return out;
}

Result<Metadata> ReadHfForm(Env* env, const std::string& folder, const std::vector<std::string>& files) {
  Metadata md;
  md.schema_2x = true;
  md.safetensors_form = true;
  std::map<std::string, size_t> entry_of;  // key -> index into md.entries
  for (const std::string& name : files) {
    const std::string path = model::JoinPath(folder, name);
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RandomSource> src, env->OpenRandom(path));
    Result<safetensors::File> header = safetensors::ReadHeader(*src);
    if (!header.ok()) return Status(header.status()).WithPath(path);
    auto corrupt = [&](const std::string& record, std::string why) {
      return Status::Corrupt(std::move(why)).WithRecord(record).WithPath(path);
    };
    json::Value info;
    if (std::optional<std::string_view> text = header->FindMetadata(kShardingInfoKey)) {
      Result<json::Value> parsed = json::Parse(*text);
      if (!parsed.ok() || !parsed->is_object())
        return corrupt("header", std::string(kShardingInfoKey) + " is no JSON object");
      info = std::move(parsed).value();
    }
    // In header (name) order, so keys come out the same on every run.
    for (uint32_t t : header->by_name) {
      const safetensors::TensorInfo& ti = header->tensors[t];
      if (!ti.torch_dtype)
        return Status::Unsupported("a dtype torch has no name for").WithRecord(ti.name).WithPath(path);
      StorageItem item;
      item.fqn = ti.name;
      item.relative_path = name;
      item.offset_in_file = ti.data_offset;
      item.length = ti.byte_size();
      item.raw = true;
      std::vector<int64_t> sizes = ti.torch_shape;
      std::vector<int64_t> offsets(sizes.size(), 0);
      if (const json::Value* v = info.Find(ti.name)) {
        const json::Value* saved = v->Find(kSavedOffsetsKey);
        if (saved == nullptr || !saved->is_array() || saved->array().size() != sizes.size())
          return corrupt(ti.name, std::string(kShardingInfoKey) + " gives no saved_offsets of " +
                                      std::to_string(sizes.size()) + " ints");
        for (size_t d = 0; d < sizes.size(); ++d) {
          std::optional<int64_t> o = saved->array()[d].AsInt64();
          if (!o || *o < 0) return corrupt(ti.name, "saved_offsets holds no non-negative int at " + std::to_string(d));
          offsets[d] = *o;
        }
      }
      auto [it, fresh] = entry_of.emplace(ti.name, md.entries.size());
      if (fresh) {
        Entry e;
        e.key = ti.name;
        e.is_tensor = true;
        e.dtype = *ti.torch_dtype;
        e.size.assign(sizes.size(), 0);
        md.entries.push_back(std::move(e));
      }
      Entry& e = md.entries[it->second];
      if (e.dtype != *ti.torch_dtype || e.size.size() != sizes.size())
        return corrupt(ti.name, "chunks of one key disagree on dtype or rank");
      for (size_t d = 0; d < sizes.size(); ++d) {
        std::optional<int64_t> end = offsets[d] <= INT64_MAX - sizes[d] ? std::optional<int64_t>(offsets[d] + sizes[d])
                                                                        : std::nullopt;
        if (!end) return corrupt(ti.name, "saved_offsets + shape overflows");
        e.size[d] = std::max(e.size[d], *end);
      }
      e.chunks.push_back(Chunk{offsets, sizes});
      item.offset = offsets;
      md.storage.push_back(std::move(item));
    }
  }
  return md;
}

}  // namespace zerofold::dcp
