// convert --dequantize: a quantized checkpoint (quant/scheme.h) written as
// bfloat16 or float32 safetensors or torch files, streaming.
//
// IN is a Hugging Face folder (config.json with quantization_config; its
// model.safetensors.index.json and shards, or model.safetensors) or one
// safetensors file, whose scheme the tensor names must then decide. Each
// quantized weight's tensors (values, scales, zero points, shape, global
// and input scales) become one tensor of the target dtype (quant/scheme.h
// names it); every other tensor is written bit for bit as it is. OUT is
// one file, or a folder written in transformers' layout (model.safetensors,
// or shards past max_shard_bytes and an index; torch: pytorch_model.bin,
// its shards and index, each archive the state dict in name order as
// torch.save of safetensors.torch.load_file's dict), with IN's other files
// copied and its config.json written without "quantization_config" (the
// member cut from the text; every other byte kept).
//
// Memory: the decode works a chunk of rows at a time (quant/decode.h): the
// chunk's packed values, scales and output, each at most about
// options.buffer_bytes (a row larger than that is one chunk); a transposed
// gpt-oss group holds one expert's packed values when they fit in four
// buffers, else reads them again, a chunk of rows at a time, for each tile
// of output rows.
//
// Files go through output::WriteFileSet: --part, --dry-run, --force,
// progress and --verify (each file read back and every tensor compared
// with a second decode of the input: safetensors byte for byte, torch by
// dtype, shape and xxh3-128) as convert has them.
#ifndef ZEROFOLD_REWRITE_DEQUANTIZE_H_
#define ZEROFOLD_REWRITE_DEQUANTIZE_H_

#include <string>
#include <vector>

#include "quant/elements.h"
#include "quant/scheme.h"
#include "rewrite/convert.h"

namespace zerofold::rewrite {

// What a dequantize run found, beside the conversion's report.
struct DequantizeReport {
  ConvertReport convert;
  std::string method;                 // quant_method, "" when named by tensor names only
  std::vector<quant::Scheme> schemes; // the schemes found
  size_t groups = 0;                  // weights dequantized
  size_t kept = 0;                    // tensors written as they are
};

// Errors carry the path and the record: those of quant::PlanDequantize;
// kUnsupported for a folder of torch checkpoints, a tensor torch has no
// dtype for (torch output); the readers' and WriteFileSet's.
Result<DequantizeReport> Dequantize(Env* env, const std::string& input, const std::string& output,
                                    const ConvertOptions& options, quant::Target target, output::ShardFormat format);

// The text of a JSON object with its member `key` cut out (whitespace and
// comma of the member included), the rest byte for byte; the text as it is
// when the object has no such member. kCorrupt when `text` is no JSON object.
Result<std::string> WithoutMember(const std::string& text, const std::string& key);

// Lists the tensors of safetensors files (reading the values quant::NeedsValues
// names) and plans them. `config` may be nullptr.
Result<quant::Plan> PlanFiles(Env* env, const std::vector<std::string>& paths, const json::Value* config,
                              std::vector<quant::SourceTensor>* tensors);

// A folder's config.json quantization_config, or nullopt (no config.json, or
// none in it).
Result<std::optional<json::Value>> FolderQuantizationConfig(Env* env, const std::string& folder);

}  // namespace zerofold::rewrite

#endif  // ZEROFOLD_REWRITE_DEQUANTIZE_H_
