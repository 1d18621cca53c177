// Linking the fp32 masters of a ZeRO-0 fp16 checkpoint to their params.
//
// FP16_Optimizer and FP16_UnfusedOptimizer (stage 0) save their masters in
// the model states' `optimizer` without names: `param_shapes` is None and the
// client's param-group order is recorded nowhere. What the file does record
// links them:
//   FP16_Optimizer (fp32_groups_flat): each group's 16-bit params are views
//     of one flat buffer (_flatten_dense_tensors, no padding) whose layout the
//     fp32 flat group repeats element for element. A group is the storage
//     whose views tile exactly as many elements as the fp32 group holds.
//   FP16_UnfusedOptimizer (fp32_groups): one master per param, of its shape.
// A candidate must also hold the master's value: the saved 16-bit param is
// the master rounded to nearest even (the optimizer copies fp32 -> fp16
// after each step). A master that still fits several params is refused
// with their names: the linker never guesses.
#ifndef ZEROFOLD_ZERO_LINK_H_
#define ZEROFOLD_ZERO_LINK_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zero/description.h"
#include "zerofold/result.h"

namespace zerofold::zero {

// Reads tensor values of the model-states file for the linker.
class ElementReader {
 public:
  virtual ~ElementReader() = default;
  // Fills `out` with the stored bytes of elements [first, first + n) of the
  // storage `t` views, counted from t.storage_offset (n = out.size() /
  // itemsize). Errors: kCorrupt past the storage's end, kIO.
  virtual Status Read(const TensorMeta& t, uint64_t first, std::span<std::byte> out) = 0;
};

struct Zero0Link {
  // Each master with the name of its param, as a tensor of the param's
  // shape (dtype and storage of the master), in group order.
  std::vector<NamedTensor> masters;
  // Masters the structure alone leaves with several candidate params
  // (reader == nullptr only): "fp32_groups[1][3] [36]: a, b".
  std::vector<std::string> by_value;
};

// Links m.optimizer_fp32_groups (kFp16Fused or kFp16Unfused) to `module`
// params. With a reader, candidates are checked by value and every link
// must be unique; without one (inspect), links are by structure and the
// masters it cannot settle are listed in `by_value`. Errors (path m.file,
// record: the param or the master):
//   kUnsupported  a master fits several params (the message names them);
//   kCorrupt      a master fits no param, or a param is claimed twice; a
//                 group no module storage matches.
Result<Zero0Link> LinkZero0Masters(const ModelStates& m, ElementReader* reader);

}  // namespace zerofold::zero

#endif  // ZEROFOLD_ZERO_LINK_H_
