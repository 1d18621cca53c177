// The one read merge --hf makes before writing: a family table's `tied`
// rules (hfexport/table.h) drop a trainer tensor only if it equals the one
// it is tied to (a tied model's output layer saved beside the embedding),
// so a head trained apart from the embedding is refused, never silently
// lost to a BASE whose config says tie_word_embeddings.
#ifndef ZEROFOLD_HFEXPORT_TIED_H_
#define ZEROFOLD_HFEXPORT_TIED_H_

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gather/plan.h"
#include "zerofold/status.h"

namespace zerofold::hfexport {

// Assembles both tensors of each pair from `sources` (through buffers of
// buffer_bytes) and compares their xxh3-128. kCorrupt (path: `config`, the
// BASE config.json that ties them) naming both when they differ; the
// assembler's errors.
Status CheckTied(std::span<const gather::SourceFile> sources,
                 const std::vector<std::pair<gather::GatherTensor, gather::GatherTensor>>& tied, size_t buffer_bytes,
                 const std::string& config);

}  // namespace zerofold::hfexport

#endif  // ZEROFOLD_HFEXPORT_TIED_H_
