// Which tensors of a quantized checkpoint form one weight, and how each is
// decoded: the scheme detector of `convert --dequantize`. Pure: the caller
// lists the tensors (and reads the few small integer tensors whose values
// matter, `weight_shape`); nothing here reads tensor bytes.
//
// Schemes, with the reference each follows:
//   fp8-block    DeepSeek-V3/R1 (config quant_method "fp8", weight_block_size
//                [bh, bw]; DeepSeek-V3 inference/kernel.py weight_dequant and
//                fp8_cast_bf16.py): X.weight F8_E4M3 [N, K] and
//                X.weight_scale_inv F32 [ceil(N/bh), ceil(K/bw)]; w = x * s
//                per block, the last blocks partial.
//   mxfp4        gpt-oss (quant_method "mxfp4"; transformers
//                integrations/mxfp4.py convert_moe_packed_tensors): X_blocks
//                U8 [E, N, G, 16] (32 E2M1 values per row of 16 bytes, low
//                nibble first) and X_scales U8 [E, N, G] (E8M0, one per 32);
//                w = lut[nibble] x 2^(scale - 127), reshaped to [E, N, G*32]
//                and transposed to [E, G*32, N] (the layout of transformers'
//                GptOssExperts), named X.
//   nvfp4        ModelOpt (quant_method "modelopt", quant_algo "NVFP4";
//                modelopt NVFP4QTensor.dequantize): X.weight U8 [N, K/2],
//                X.weight_scale F8_E4M3 [N, K/16], X.weight_scale_2 F32 [] or
//                [1]; w = e2m1 x (float(scale) x scale_2). X.input_scale is
//                dropped.
//   nvfp4-ct     compressed-tensors nvfp4-pack-quantized (NVFP4PackedCompressor
//                .decompress, forward_helpers _dequantize): X.weight_packed
//                U8 [N, K/2], X.weight_scale F8_E4M3 [N, K/16],
//                X.weight_global_scale F32 [1], the inverse of ModelOpt's
//                scale_2: w = e2m1 x (float(scale) / global_scale).
//   int-packed   compressed-tensors pack-quantized (pack_quantized/helpers.py
//                pack_to_int32): X.weight_packed I32 [N, ceil(K*b/32)], the
//                b-bit values (b = num_bits, 1..8) stored as q + 2^(b-1) in a
//                dense little-endian bit stream per row; X.weight_shape [2]
//                holds [N, K]; X.weight_scale [N, G] (group: G = ceil(K/g);
//                channel: [N, 1]; tensor: [1]); asymmetric adds
//                X.weight_zero_point, for group and channel packed the same
//                way along dim 0 ([ceil(N*b/32), G] I32), else as the scale;
//                activation ordering adds X.weight_g_idx [K] (column c in
//                group g_idx[c]); w = (q - z) x s.
//   fp8          compressed-tensors float-quantized and ModelOpt FP8: X.weight
//                F8_E4M3 [N, K] and X.weight_scale F32/BF16/F16, [] or [1]
//                (tensor), [N, 1] (channel), [N, G] (group) or
//                [ceil(N/bh), ceil(K/bw)] (block); w = x x s.
//   int8         compressed-tensors int-quantized (naive_quantized): X.weight I8
//                and X.weight_scale as fp8's, [X.weight_zero_point I8 of the
//                scale's shape]; w = (q - z) x s.
//   fp4-e8m0     DeepSeek-V4's routed experts (maxtext deepseek_dequantize.py
//                dequantize_mxfp4, AI-Hypercomputer/maxtext PR #3873): X.weight
//                I8 [N, K/2] holding E2M1 pairs (low nibble first) and X.scale
//                F8_E8M0 [N, ceil(K/32)]; w = e2m1 x 2^(s - 127). DeepSeek-V4's
//                F8_E4M3 linears with X.scale F8_E8M0 [ceil(N/bh), ceil(K/bw)]
//                are fp8-block (the scale a power of two).
// E8M0 byte 255 is NaN (OCP MX v1.0: the whole block NaN); transformers'
// and maxtext's ldexp/exp2 make it 2^128 = inf instead (tests/interop
// fixtures follow the spec: fixtures/quant/README.md).
// Every value is computed in float32 and rounded once to the target
// (quant/elements.h Store). Tensors of other names are kept as they are.
#ifndef ZEROFOLD_QUANT_SCHEME_H_
#define ZEROFOLD_QUANT_SCHEME_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "json/value.h"
#include "safetensors/dtype.h"
#include "zerofold/result.h"

namespace zerofold::quant {

// One tensor of the input, as its file's header lists it.
struct SourceTensor {
  std::string name;
  safetensors::Dtype dtype = safetensors::Dtype::U8;
  std::vector<uint64_t> shape;
  uint32_t file = 0;       // index into the caller's files (errors name it)
  uint64_t offset = 0;     // absolute offset of its bytes in that file
  uint64_t bytes = 0;
  // The values of a small integer tensor named *.weight_shape or
  // *.weight_g_idx, filled by the caller before PlanDequantize
  // (NeedsValues); else empty.
  std::vector<int64_t> values;
};

// True for the tensors whose values PlanDequantize reads (weight_shape, and
// weight_g_idx up to 16 MiB).
bool NeedsValues(const SourceTensor& t);
// True when a tensor's name is one of a quantized weight's (its scales,
// zero points, shape, or MXFP4 blocks): what inspect takes as a sign.
bool LooksQuantized(std::span<const SourceTensor> tensors);

enum class Scheme : uint8_t { kFp8Block, kMxfp4, kNvfp4, kNvfp4CT, kIntPacked, kFp8, kInt8, kFp4E8M0 };
// "fp8-block", "mxfp4", "nvfp4", "nvfp4-ct", "int-packed", "fp8", "int8", "fp4-e8m0".
const char* SchemeName(Scheme scheme);

enum class Coding : uint8_t {
  kE4M3,       // one byte per element
  kE2M1,       // two per byte, low nibble first
  kIntPacked,  // `bits` per element in a dense bit stream of int32 words per row
  kInt8,       // one int8 per element
};

// One output tensor decoded from several input tensors. The decode works on
// a matrix of `rows` x `cols` elements in the input's row-major order
// (leading dimensions folded into rows); element (r, c) has the scale
// (and zero point) of grid cell (r / block_rows, c / block_cols), the grid
// having scale_cols columns.
struct Group {
  Scheme scheme = Scheme::kFp8;
  std::string name;                // the output tensor's name
  std::vector<uint64_t> shape;     // the output tensor's shape
  uint64_t rows = 0, cols = 0;
  Coding coding = Coding::kE4M3;
  uint32_t bits = 8;               // kIntPacked: bits per value
  uint32_t weight = 0;             // tensor index of the packed values
  uint32_t scale = 0;              // tensor index of the scales
  uint64_t block_rows = 1, block_cols = 1, scale_cols = 1;
  bool e8m0_scale = false;          // scales are E8M0 bytes (U8 or F8_E8M0): DecodeE8M0
  std::optional<uint32_t> zero_point;
  bool zero_point_packed = false;  // packed along dim 0 (int-packed group/channel)
  std::optional<uint32_t> global_scale;
  bool global_divides = false;     // nvfp4-ct: scale / global; else scale x global
  // gpt-oss: the output is the decoded [E, N, K] transposed to [E, K, N]
  // (experts = E, rows = E*N).
  bool transpose = false;
  uint64_t experts = 1;
  // Activation ordering: per column, its scale grid column (else c / block_cols).
  std::vector<uint32_t> g_idx;
  std::vector<uint32_t> members;   // every input tensor the group replaces
};

struct Plan {
  std::string method;              // quant_method of the config, or "" (names only)
  std::vector<Scheme> schemes;     // the schemes found, each once, in order
  std::vector<Group> groups;
  // The output in input order: a group (index into groups) or a tensor
  // kept as it is (index into the tensors).
  struct Item {
    bool group = false;
    uint32_t index = 0;
  };
  std::vector<Item> items;
};

// Pairs the tensors into groups. `config` is config.json's
// quantization_config, or nullptr when there is none (a file given alone):
// then the names decide, and a scheme the names leave open (int-packed's
// bits and group size) is kInvalidArgument asking for the folder.
// Errors name the tensor (record) and carry `files[t.file]` as the path
// (config errors: none; the caller adds config.json's):
//   kCorrupt          a scale without its weight or a weight without its
//                     scale, a shape other than the scheme's (each
//                     dimension named, ceil division), a dtype other than
//                     the scheme's;
//   kUnsupported      a quant_method or format this does not decode, a
//                     config value it does not know (num_bits, strategy).
Result<Plan> PlanDequantize(const json::Value* config, std::span<const SourceTensor> tensors,
                            std::span<const std::string> files);

}  // namespace zerofold::quant

#endif  // ZEROFOLD_QUANT_SCHEME_H_
