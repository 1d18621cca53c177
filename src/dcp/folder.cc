#include "dcp/folder.h"

#include <span>

#include "model/hf_folder.h"

namespace zerofold::dcp {

namespace {

bool HoldsMetadata(Env* env, const std::string& dir) {
  const std::string path = model::JoinPath(dir, kMetadataFile);
  return env->FileExists(path) && !env->IsDirectory(path);
}

}  // namespace

std::optional<std::string> FindDcpFolder(Env* env, const std::string& dir) {
  if (!env->IsDirectory(dir)) return std::nullopt;
  if (HoldsMetadata(env, dir)) return dir;
  const std::string model = model::JoinPath(dir, kAccelerateModelFolder);
  if (env->IsDirectory(model) && HoldsMetadata(env, model)) return model;
  return std::nullopt;
}

Result<Metadata> LoadMetadata(Env* env, const std::string& folder, uint64_t max_bytes,
                              const pickle::DecodeLimits& limits) {
  const std::string path = model::JoinPath(folder, kMetadataFile);
  Result<std::string> text = env->ReadSmallFile(path, max_bytes);
  if (!text.ok()) return Status(text.status()).WithPath(path);
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text->data()), text->size());
  Result<Metadata> md = ReadMetadata(bytes, limits);
  if (!md.ok()) return Status(md.status()).WithPath(path);
  return md;
}

}  // namespace zerofold::dcp
