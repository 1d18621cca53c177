// Hand-built checkpoint models for the job tests (shrink, convert, diff, verify): storages of given sizes
// and named views over them, without a pickle graph or bytes.
#ifndef ZEROFOLD_TESTS_SUPPORT_CHECKPOINT_BUILDER_H_
#define ZEROFOLD_TESTS_SUPPORT_CHECKPOINT_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "torch/checkpoint.h"

namespace zerofold::testing {

struct View {
  std::string name;
  uint32_t storage = 0;
  torch::DType dtype = torch::DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t offset = 0;  // elements
};

// Storage i has key "i", nbytes storage_nbytes[i], and its record holds
// exactly those bytes.
inline torch::Checkpoint BuildCheckpoint(const std::vector<uint64_t>& storage_nbytes, const std::vector<View>& views) {
  torch::Checkpoint ckpt;
  for (size_t i = 0; i < storage_nbytes.size(); ++i) {
    torch::Storage s{};
    s.key = std::to_string(i);
    s.dtype = views.empty() ? torch::DType::kFloat32 : views[0].dtype;
    s.nbytes = storage_nbytes[i];
    s.record_size = storage_nbytes[i];
    ckpt.storages.push_back(s);
  }
  for (const View& v : views) {
    torch::Tensor t{};
    t.name = v.name;
    t.dtype = v.dtype;
    t.shape = v.shape;
    t.stride = v.stride;
    t.storage_offset = v.offset;
    t.storage = v.storage;
    ckpt.tensors.push_back(t);
  }
  return ckpt;
}

}  // namespace zerofold::testing

#endif  // ZEROFOLD_TESTS_SUPPORT_CHECKPOINT_BUILDER_H_
