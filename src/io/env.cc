#include "zerofold/env.h"

#include <string>
#include <vector>

namespace zerofold {

Status ReadExactAt(const RandomSource& src, uint64_t offset, std::span<std::byte> dst) {
  ZF_ASSIGN_OR_RETURN(size_t n, src.ReadAt(offset, dst));
  if (n != dst.size()) {
    return Status::Corrupt("truncated: need " + std::to_string(dst.size()) + " bytes at " +
                           std::to_string(offset) + ", file has " + std::to_string(src.size()))
        .WithOffset(offset + n)
        .WithPath(src.name());
  }
  return Status::OK();
}

Status StreamSource::Skip(uint64_t n) {
  std::vector<std::byte> buf(n < (1u << 16) ? static_cast<size_t>(n) : (1u << 16));
  while (n > 0) {
    size_t want = n < buf.size() ? static_cast<size_t>(n) : buf.size();
    ZF_ASSIGN_OR_RETURN(size_t got, Read(std::span<std::byte>(buf.data(), want)));
    if (got == 0)
      return Status::Corrupt("truncated: stream ended " + std::to_string(n) + " bytes early")
          .WithOffset(position())
          .WithPath(name());
    n -= got;
  }
  return Status::OK();
}

Result<bool> SameFile(Env* env, const std::string& a, const std::string& b) {
  Result<FileId> id_a = env->GetFileId(a);
  Result<FileId> id_b = id_a.ok() ? env->GetFileId(b) : id_a;
  for (const Result<FileId>* id : {&id_a, &id_b}) {
    if (id->ok()) continue;
    if (id->status().code() == Code::kNotFound) return false;
    return id->status();
  }
  return *id_a == *id_b;
}

Status ReadExact(StreamSource& src, std::span<std::byte> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    ZF_ASSIGN_OR_RETURN(size_t got, src.Read(dst.subspan(done)));
    if (got == 0)
      return Status::Corrupt("truncated: stream ended " + std::to_string(dst.size() - done) +
                             " bytes early")
          .WithOffset(src.position())
          .WithPath(src.name());
    done += got;
  }
  return Status::OK();
}

}  // namespace zerofold
