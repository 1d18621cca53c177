// The rules of an output folder that every job writing one shares (merge,
// shrink and convert of a folder, --part finish): the index transformers
// reads, the names of an earlier save and their removal, the refusal of a
// target that is an input, and the other files (config, tokenizer) copied
// beside the weights. Shard names and plans: output/sharding.h; parts:
// output/parts.h.
#ifndef ZEROFOLD_OUTPUT_FOLDER_H_
#define ZEROFOLD_OUTPUT_FOLDER_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/read_plan.h"
#include "output/parts.h"
#include "output/sharding.h"
#include "output/target.h"
#include "zerofold/env.h"
#include "zerofold/result.h"

namespace zerofold::output {

// transformers' index (`json.dumps(index, indent=2, sort_keys=True)`:
// metadata.total_size, then weight_map sorted by name) for `path`.
std::string IndexText(const std::string& path, uint64_t total_size,
                      std::vector<std::pair<std::string, std::string>> weight_map);

// The files of an earlier save of `format` in `folder` (IsSavedWeightsName)
// that are not in `written`, as paths in name order: what an output into
// the folder removes, as transformers' save_pretrained does, so a folder
// never mixes two saves (output/target.h CheckTargets refuses them without
// --force). Empty when `folder` is no folder.
Result<std::vector<std::string>> EarlierSave(Env* env, const std::string& folder, ShardFormat format,
                                             const std::vector<std::string>& written);

// The files of folder `input` other than `handled` names and hidden ones
// (config, tokenizer: what a folder output copies as they are), by name.
Result<std::vector<std::string>> OtherFileNames(Env* env, const std::string& input,
                                                const std::set<std::string>& handled);
// The files of a training checkpoint folder (Hugging Face Trainer's
// checkpoint-N/) that transformers' from_pretrained reads beside the
// weights, by name: config.json, generation_config.json, the tokenizer's
// (tokenizer.json, tokenizer_config.json, special_tokens_map.json,
// added_tokens.json, vocab.json, vocab.txt, merges.txt, tokenizer.model,
// spiece.model, sentencepiece.bpe.model, chat_template.jinja,
// chat_template.json) and the processor's (preprocessor_config.json,
// processor_config.json), a custom-code model's modules (configuration_*.py,
// modeling_*.py, tokenization_*.py, processing_*.py, image_processing_*.py,
// feature_extraction_*.py) and tiktoken vocabularies (tiktoken.model,
// *.tiktoken). Not the training state (trainer_state.json,
// training_args.bin, optimizer, scheduler, rng states). Empty when `input`
// is no folder.
Result<std::vector<std::string>> ModelFileNames(Env* env, const std::string& input);

// What a folder output writes after its weights, in this order: the copies
// of an input folder's other files, then the index (a folder with an index
// is complete), then the removal of an earlier save's other files.
struct FolderTail {
  std::string copy_from;              // the input folder of `copies`
  std::vector<std::string> copies;    // names, copied from copy_from into OUT
  std::string index;                  // the index's path; "" for none
  std::string index_text;
  std::vector<std::string> stale;     // files of an earlier save to remove (paths)
};
// The files the tail writes, copies then the index, in `out`.
std::vector<std::string> TailPaths(const std::string& out, const FolderTail& tail);
// The bytes the tail writes: the copies' sizes and the index text's.
Result<uint64_t> TailBytes(Env* env, const FolderTail& tail);
// Adds to `plan` what writing the tail reads: each copy whole, in order;
// nothing for a --part I/N, which writes no tail.
Status AddTailReads(Env* env, const FolderTail& tail, const PartSpec& part, io::ReadPlan* plan);
// For --part finish, which writes the tail after the parts wrote the
// weights: per TailPaths, whether the file already holds exactly the bytes
// the tail would write (left as is: a finish run again changes nothing). A
// file there with other bytes is kInvalidArgument ("exists; use --force to
// replace it") unless `force`.
Result<std::vector<bool>> TailInPlace(Env* env, const std::string& out, const FolderTail& tail, bool force);
// Before a folder output writes anything, after SelectPartFiles chose the
// weights this run writes: output/target.h's checks of every file the run
// writes or removes, by part, then the free space they need.
//   kAll     CheckTargets(inputs, {weights, TailPaths}, {tail.stale}, force);
//   kPart    the weights as SelectPartFiles left them (complete ones are
//            skipped, another size refused); the tail is finish's; tail.stale
//            refused without force (naming --force for every part and finish);
//   kFinish  TailInPlace (into *tail_in_place); tail.stale as kPart.
// Every file written or removed is refused when it is an input by any name.
// Then CheckFreeSpace(out, the planned bytes of the weights this run writes
// plus the tail's). Nothing is checked for a dry run but inputs.
Status CheckFolderOutput(Env* env, const std::string& out, const std::vector<std::string>& inputs,
                         const PartSpec& part, const PartFiles& weights, const FolderTail& tail, bool force,
                         bool dry_run, std::vector<bool>* tail_in_place);

// Writes the tail into `out`, each file atomically and committed through
// `rollback`, skipping the TailPaths marked in `skip` (empty: none), then
// removes the stale files. Fills `copied` (names) and `removed` (names).
Status WriteTail(Env* env, const std::string& out, const FolderTail& tail, const std::vector<bool>& skip,
                 size_t buffer_bytes, OutputRollback* rollback, std::vector<std::string>* copied,
                 std::vector<std::string>* removed);
// Copies a file to `to` atomically (temp file, fsync, rename), through a
// buffer of at most buffer_bytes.
Status CopyFile(Env* env, const std::string& from, const std::string& to, size_t buffer_bytes);
// Writes `text` to `path` atomically.
Status WriteSmallFile(Env* env, const std::string& path, const std::string& text);

}  // namespace zerofold::output

#endif  // ZEROFOLD_OUTPUT_FOLDER_H_
