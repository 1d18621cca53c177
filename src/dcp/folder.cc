#include "dcp/folder.h"

#include <span>
#include <string_view>
#include <vector>

#include "dcp/hf_form.h"
#include "model/hf_folder.h"

namespace zerofold::dcp {

namespace {

bool HoldsMetadata(Env* env, const std::string& dir) {
  const std::string path = model::JoinPath(dir, kMetadataFile);
  return env->FileExists(path) && !env->IsDirectory(path);
}

}  // namespace

std::optional<DcpFolder> FindDcpFolder(Env* env, const std::string& dir) {
  for (const std::string& d : {dir, model::JoinPath(dir, kAccelerateModelFolder)}) {
    if (!env->IsDirectory(d)) continue;
    if (HoldsMetadata(env, d)) return DcpFolder{d, {}};
    std::vector<std::string> shards = HfShardFiles(env, d);
    if (!shards.empty()) return DcpFolder{d, std::move(shards)};
  }
  return std::nullopt;
}

bool HoldsDistcpFiles(Env* env, const std::string& dir) {
  Result<std::vector<DirEntry>> entries = env->ListDir(dir);
  if (!entries.ok()) return false;
  constexpr std::string_view kSuffix = ".distcp";
  for (const DirEntry& e : *entries) {
    std::string_view n = e.name;
    if (!e.is_dir && n.size() > kSuffix.size() && n.substr(n.size() - kSuffix.size()) == kSuffix) return true;
  }
  return false;
}

Result<Metadata> LoadMetadata(Env* env, const DcpFolder& folder, uint64_t max_bytes,
                              const pickle::DecodeLimits& limits) {
  if (!folder.hf_shards.empty()) return ReadHfForm(env, folder.path, folder.hf_shards);
  const std::string path = model::JoinPath(folder.path, kMetadataFile);
  Result<std::string> text = env->ReadSmallFile(path, max_bytes);
  if (!text.ok()) return Status(text.status()).WithPath(path);
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text->data()), text->size());
  Result<Metadata> md = ReadMetadata(bytes, limits);
  if (!md.ok()) return Status(md.status()).WithPath(path);
  return md;
}

}  // namespace zerofold::dcp
