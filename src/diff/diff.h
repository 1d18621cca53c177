// zerofold diff: two checkpoints compared tensor by tensor, whatever their
// formats and layouts (torch zip or legacy, safetensors, Hugging Face
// folders with an index, merge output), streaming.
//
// Names are those `inspect` lists (torch/checkpoint.h Tensor::name: dict
// keys and indices joined with '.'; safetensors names as stored); a folder's
// names are those of all its checkpoint files (rewrite/convert.h
// FolderCheckpoints). For each name in both:
//   - dtype and shape are compared; different shapes are different and no
//     values are read;
//   - values are read in C order, both tensors in lockstep, through two
//     Gatherers (gather/view_reader.h) over blocks of at most buffer_bytes: memory
//     is O(buffer_bytes), whatever the tensors' sizes and strides;
//   - exact mode (no tolerance given): equal means bit for bit, the same
//     dtype and the same logical bytes (their xxh3-128, verify/verify.h, is
//     reported): -0.0 differs from 0.0, a NaN equals only a NaN of the same
//     bits. Different dtypes are different, values not compared.
//   - close mode (atol or rtol given; the other takes torch.allclose's
//     default, rtol 1e-05, atol 1e-08): an element pair is close as
//     torch.isclose decides, computed in float64: a == b, or both finite and
//     |a - b| <= atol + rtol * |b| (b is B's element; complex: the modulus),
//     or both NaN with equal_nan. Infinities are close only to themselves.
//     Tensors of different dtypes are compared by value after widening both
//     to float64 (the dtype difference is reported, and alone does not make
//     them different).
// Per tensor compared by value: the number of elements that differ (not
// bit-equal, or not close), the first one's index (per dim), and, for
// numeric dtypes (floating, float8 included, complex, integer, bool), the largest |a - b|
// and |a - b| / |b| over the pairs where both are finite (for the relative
// difference, also b != 0), in float64: integers past 2^53 round.
// Quantized, packed and bits dtypes compare their bytes only (by digest
// when their elements cannot be gathered).
#ifndef ZEROFOLD_DIFF_DIFF_H_
#define ZEROFOLD_DIFF_DIFF_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "torch/checkpoint.h"
#include "verify/verify.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::diff {

// torch.allclose's defaults.
constexpr double kDefaultRtol = 1e-05;
constexpr double kDefaultAtol = 1e-08;

struct DiffOptions {
  torch::ReadOptions read;
  // Bytes per block of each side (two Gatherers, two blocks, two decoded
  // rows): memory is a small multiple of this. At least 64.
  size_t buffer_bytes = size_t{4} << 20;
  // Either set: close mode (see above).
  std::optional<double> atol;
  std::optional<double> rtol;
  bool equal_nan = false;  // close mode: NaN is close to NaN
  // Compare only the names matching one of these globs (model/glob.h: *, ?,
  // [..]) on either side; empty: every name. DiffPaths refuses patterns
  // that match no name of A or B (kInvalidArgument).
  std::vector<std::string> only;
  // Called as values are read: bytes of both sides read so far, of the
  // total of the tensors in both (DiffTensorSets; DiffTensor alone never
  // calls it).
  std::function<void(uint64_t done, uint64_t total)> progress;

  bool close_mode() const { return atol.has_value() || rtol.has_value(); }
};

// One side's tensor: a view and the file it is read from.
struct TensorRef {
  const RandomSource* src = nullptr;
  const torch::Checkpoint* ckpt = nullptr;
  const torch::Tensor* tensor = nullptr;
};

struct TensorDiff {
  std::string name;
  torch::DType dtype_a = torch::DType::kFloat32;
  torch::DType dtype_b = torch::DType::kFloat32;
  std::vector<int64_t> shape_a;
  std::vector<int64_t> shape_b;
  bool values_compared = false;  // same shape, and same dtype or close mode
  // Same dtype: the xxh3-128 of each side's logical bytes.
  std::optional<torch::Hash128> digest_a;
  std::optional<torch::Hash128> digest_b;
  uint64_t numel = 0;
  uint64_t differing = 0;                 // elements not equal (or not close)
  std::vector<int64_t> first_index;       // of the first differing element; empty if none
  bool numeric = false;                   // max_abs_diff and max_rel_diff hold values
  double max_abs_diff = 0;
  double max_rel_diff = 0;
  bool same = false;                      // equal (exact mode) or close (close mode)
};

struct DiffReport {
  std::vector<std::string> files_a;  // the checkpoint files read
  std::vector<std::string> files_b;
  std::vector<std::string> only_a;   // names, sorted
  std::vector<std::string> only_b;
  std::vector<TensorDiff> tensors;   // names in both, sorted
  size_t different = 0;              // tensors with !same

  bool same() const { return only_a.empty() && only_b.empty() && different == 0; }
};

// Compares two tensors as above. Errors: the sources' read errors (with the
// storage record and the file's path), kCorrupt for a view that leaves its
// storage, kInvalidArgument for a buffer under 64 bytes.
Result<TensorDiff> DiffTensor(const TensorRef& a, const TensorRef& b, const DiffOptions& options);

// Compares the tensors of two sides by name. kCorrupt (record: the name)
// when a side holds two tensors of one name.
Result<DiffReport> DiffTensorSets(const std::vector<TensorRef>& a, const std::vector<TensorRef>& b,
                                  const DiffOptions& options);

// Reads `a` and `b` (each a torch or safetensors file, or a Hugging Face
// folder) and compares them. Errors carry the path: the readers'
// (kCorrupt, kUnsupported, kLimit), kNotFound / kIO for files, and
// kInvalidArgument for a stream name ('-', .zst): both sides are read at
// random.
Result<DiffReport> DiffPaths(Env* env, const std::string& a, const std::string& b, const DiffOptions& options);

}  // namespace zerofold::diff

#endif  // ZEROFOLD_DIFF_DIFF_H_
