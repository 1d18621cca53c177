#include "zero/files.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::zero {
namespace {

using Names = std::vector<std::string>;

TEST_CASE("tag folders as DeepSpeed writes them") {
  // zero1_ws2_fp16
  Result<TagFiles> f = ClassifyTagFiles(Names{"zero_pp_rank_1_mp_rank_00_optim_states.pt",
                                              "mp_rank_00_model_states.pt",
                                              "zero_pp_rank_0_mp_rank_00_optim_states.pt", "notes.txt"});
  REQUIRE(f.ok());
  CHECK_EQ(f->model_states, "mp_rank_00_model_states.pt");
  CHECK(f->rank_model_states.empty());
  CHECK_EQ(f->optim_states,
           Names{"zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"});

  // bf16_ prefixes; ranks sorted numerically, not as text.
  Names bf16;
  for (int r = 11; r >= 0; --r) bf16.push_back("bf16_zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt");
  bf16.push_back("mp_rank_00_model_states.pt");
  f = ClassifyTagFiles(bf16);
  REQUIRE(f.ok());
  REQUIRE_EQ(f->optim_states.size(), 12u);
  CHECK_EQ(f->optim_states[2], "bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt");
  CHECK_EQ(f->optim_states[10], "bf16_zero_pp_rank_10_mp_rank_00_optim_states.pt");

  // Stage 3: model states per rank.
  f = ClassifyTagFiles(Names{"zero_pp_rank_1_mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt",
                             "zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"});
  REQUIRE(f.ok());
  CHECK_EQ(f->model_states, "");
  CHECK_EQ(f->rank_model_states,
           Names{"zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_model_states.pt"});
  CHECK_EQ(f->optim_states.size(), 2u);

  // ZeRO-0: model states only; the planner decides.
  f = ClassifyTagFiles(Names{"mp_rank_00_model_states.pt"});
  REQUIRE(f.ok());
  CHECK(f->optim_states.empty());
}

TEST_CASE("layouts merge refuses, and missing or doubled rank files") {
  struct Bad {
    Names names;
    Code code;
    std::string path;
    std::string message;
  } bads[] = {
      {{"mp_rank_00_model_states.pt", "mp_rank_01_model_states.pt"}, Code::kUnsupported, "mp_rank_01_model_states.pt",
       "tensor-parallel checkpoint (mp_rank_01_model_states.pt): only mp_rank_00 is supported"},
      {{"zero_pp_rank_0_mp_rank_02_optim_states.pt"}, Code::kUnsupported, "zero_pp_rank_0_mp_rank_02_optim_states.pt",
       "tensor-parallel checkpoint (zero_pp_rank_0_mp_rank_02_optim_states.pt): only mp_rank_00 is supported"},
      {{"mp_rank_00_model_states.pt", "layer_01-model_00-model_states.pt"}, Code::kUnsupported,
       "layer_01-model_00-model_states.pt",
       "pipeline-parallel checkpoint (layer_01-model_00-model_states.pt): layer_* files are not supported"},
      {{"mp_rank_00_model_states.pt", "expp_rank_0_mp_rank_00_optim_states.pt"}, Code::kUnsupported,
       "expp_rank_0_mp_rank_00_optim_states.pt",
       "MoE checkpoint (expp_rank_0_mp_rank_00_optim_states.pt): expert files are not supported"},
      {{"mp_rank_00_model_states.pt", "layer_0_expert_3_mp_rank_00_model_states.pt"}, Code::kUnsupported,
       "layer_0_expert_3_mp_rank_00_model_states.pt",
       "MoE checkpoint (layer_0_expert_3_mp_rank_00_model_states.pt): expert files are not supported"},
      {{"mp_rank_00_model_states.pt", "zero_pp_rank_x_mp_rank_00_optim_states.pt"}, Code::kUnsupported,
       "zero_pp_rank_x_mp_rank_00_optim_states.pt",
       "unrecognized DeepSpeed states file zero_pp_rank_x_mp_rank_00_optim_states.pt"},
      {{"mp_rank_00_model_states.pt", "zero_pp_rank_1234567890_mp_rank_00_optim_states.pt"}, Code::kUnsupported,
       "zero_pp_rank_1234567890_mp_rank_00_optim_states.pt",
       "unrecognized DeepSpeed states file zero_pp_rank_1234567890_mp_rank_00_optim_states.pt"},
      {{"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "zero_pp_rank_1_mp_rank_00_optim_states.pt", "zero_pp_rank_3_mp_rank_00_optim_states.pt"},
       Code::kNotFound, "", "optim states of rank 2 missing: found ranks 0, 1, 3"},
      {{"mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"}, Code::kNotFound, "",
       "optim states of rank 0 missing: found ranks 1"},
      {{"zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_2_mp_rank_00_model_states.pt",
        "zero_pp_rank_0_mp_rank_00_optim_states.pt"},
       Code::kNotFound, "", "model states of rank 1 missing: found ranks 0, 2"},
      {{"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"},
       Code::kCorrupt, "zero_pp_rank_0_mp_rank_00_optim_states.pt",
       "two optim states files for rank 0: bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt and "
       "zero_pp_rank_0_mp_rank_00_optim_states.pt"},
      {{"zero_pp_rank_0_mp_rank_00_optim_states.pt"}, Code::kNotFound, "",
       "no model states file (mp_rank_00_model_states.pt or zero_pp_rank_0_mp_rank_00_model_states.pt) among 1 "
       "files"},
  };
  for (const Bad& b : bads) {
    CAPTURE(b.message);
    Status s = ClassifyTagFiles(b.names).status();
    CHECK_EQ(s.code(), b.code);
    CHECK_EQ(s.path(), b.path);
    CHECK_EQ(s.message(), b.message);
  }
}

}  // namespace
}  // namespace zerofold::zero
