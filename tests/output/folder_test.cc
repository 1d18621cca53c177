#include "output/folder.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/mem_env.h"

namespace zerofold::output {
namespace {

TEST_CASE("EarlierSave lists a folder's saved weights of one format but the written ones, in name order") {
  io::MemEnv env;
  for (const char* f : {"out/pytorch_model-00002-of-00002.bin", "out/pytorch_model.bin.index.json",
                        "out/pytorch_model-00001-of-00002.bin", "out/pytorch_model.bin", "out/model.safetensors",
                        "out/config.json", "out/sub/pytorch_model.bin"})
    env.SetFile(f, "x");
  CHECK_EQ(EarlierSave(&env, "out", ShardFormat::kTorch, {}).value(),
           std::vector<std::string>{"out/pytorch_model-00001-of-00002.bin", "out/pytorch_model-00002-of-00002.bin",
                                    "out/pytorch_model.bin", "out/pytorch_model.bin.index.json"});
  // The files the new save writes are not the earlier save's.
  CHECK_EQ(EarlierSave(&env, "out", ShardFormat::kTorch, {"out/pytorch_model.bin"}).value(),
           std::vector<std::string>{"out/pytorch_model-00001-of-00002.bin", "out/pytorch_model-00002-of-00002.bin",
                                    "out/pytorch_model.bin.index.json"});
  CHECK_EQ(EarlierSave(&env, "out/", ShardFormat::kSafetensors, {}).value(),
           std::vector<std::string>{"out/model.safetensors"});
  CHECK(EarlierSave(&env, "none", ShardFormat::kTorch, {}).value().empty());
  CHECK(EarlierSave(&env, "out/config.json", ShardFormat::kTorch, {}).value().empty());
}

TEST_CASE("the tail of a folder output: copies then the index; finish keeps files with the same bytes") {
  io::MemEnv env;
  env.SetFile("in/config.json", "{}");
  env.SetFile("in/tokenizer.json", "tok");
  FolderTail tail;
  tail.copy_from = "in";
  tail.copies = {"config.json", "tokenizer.json"};
  tail.index = "out/pytorch_model.bin.index.json";
  tail.index_text = IndexText(tail.index, 12, {{"b", "s2"}, {"a", "s1"}});
  CHECK_EQ(TailPaths("out", tail),
           std::vector<std::string>{"out/config.json", "out/tokenizer.json", "out/pytorch_model.bin.index.json"});
  CHECK_EQ(TailBytes(&env, tail).value(), 2 + 3 + tail.index_text.size());
  // Nothing there yet: nothing in place.
  CHECK_EQ(TailInPlace(&env, "out", tail, false).value(), std::vector<bool>{false, false, false});
  env.SetFile("out/stale.bin", "x");
  tail.stale = {"out/stale.bin"};
  std::vector<std::string> copied, removed;
  REQUIRE(WriteTail(&env, "out", tail, {}, 4096, nullptr, &copied, &removed).ok());
  CHECK_EQ(copied, std::vector<std::string>{"config.json", "tokenizer.json"});
  CHECK_EQ(removed, std::vector<std::string>{"stale.bin"});
  CHECK_FALSE(env.FileExists("out/stale.bin"));
  // Written: all in place; one with other bytes is refused without force.
  tail.stale.clear();
  CHECK_EQ(TailInPlace(&env, "out", tail, false).value(), std::vector<bool>{true, true, true});
  env.SetFile("out/tokenizer.json", "other");
  Status s = TailInPlace(&env, "out", tail, false).status();
  CHECK_EQ(s.ToString(), "out/tokenizer.json: invalid argument: exists; use --force to replace it");
  CHECK_EQ(TailInPlace(&env, "out", tail, true).value(), std::vector<bool>{true, false, true});
}

TEST_CASE("ModelFileNames: what from_pretrained reads beside the weights, not the training state") {
  io::MemEnv env;
  for (const char* f : {"ck/config.json", "ck/generation_config.json", "ck/tokenizer.json", "ck/merges.txt",
                        "ck/trainer_state.json", "ck/training_args.bin", "ck/rng_state_0.pth", "ck/scheduler.pt",
                        "ck/latest", "ck/global_step2/mp_rank_00_model_states.pt", "ck/.hidden"})
    env.SetFile(f, "x");
  CHECK_EQ(ModelFileNames(&env, "ck").value(),
           std::vector<std::string>{"config.json", "generation_config.json", "merges.txt", "tokenizer.json"});
  CHECK(ModelFileNames(&env, "ck/config.json").value().empty());
}

TEST_CASE("ModelFileNames: a custom-code model's modules and tiktoken vocabularies, not other scripts") {
  io::MemEnv env;
  for (const char* f : {"k/config.json", "k/configuration_deepseek.py", "k/modeling_deepseek.py",
                        "k/tokenization_kimi.py", "k/tiktoken.model", "k/qwen.tiktoken", "k/train.py",
                        "k/convert_to_hf.py", "k/modeling_notes.txt"})
    env.SetFile(f, "x");
  CHECK_EQ(ModelFileNames(&env, "k").value(),
           std::vector<std::string>{"config.json", "configuration_deepseek.py", "modeling_deepseek.py", "qwen.tiktoken",
                                    "tiktoken.model", "tokenization_kimi.py"});
}

}  // namespace
}  // namespace zerofold::output
