#include "hfexport/tied.h"

#include "gather/assemble.h"
#include "torch/digest.h"

namespace zerofold::hfexport {

namespace {

Result<torch::Hash128> Digest(gather::TensorAssembler& assembler, const gather::GatherTensor& t) {
  torch::Xxh3Hasher hasher;
  ZF_TRY(assembler.Assemble(t, [&](std::span<const std::byte> bytes) {
    hasher.Update(bytes);
    return Status::OK();
  }));
  return hasher.Digest();
}

}  // namespace

Status CheckTied(std::span<const gather::SourceFile> sources,
                 const std::vector<std::pair<gather::GatherTensor, gather::GatherTensor>>& tied, size_t buffer_bytes,
                 const std::string& config) {
  if (tied.empty()) return Status::OK();
  gather::TensorAssembler assembler(sources, buffer_bytes);
  for (const auto& [dropped, owner] : tied) {
    ZF_ASSIGN_OR_RETURN(torch::Hash128 a, Digest(assembler, dropped));
    ZF_ASSIGN_OR_RETURN(torch::Hash128 b, Digest(assembler, owner));
    if (a != b)
      return Status::Corrupt("config.json ties " + dropped.name + " to " + owner.name +
                             ", but the checkpoint holds them apart (xxh3-128 " + a.Hex() + " and " + b.Hex() +
                             "): a head trained apart from the embedding needs a BASE with tie_word_embeddings false")
          .WithPath(config);
  }
  return Status::OK();
}

}  // namespace zerofold::hfexport
