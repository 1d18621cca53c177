// rewrite/dequantize.h over MemEnv: WithoutMember's cuts; a DeepSeek FP8
// block folder (weight and scale in two shards) dequantized into a folder,
// the value of each element checked; a read failing at any moment, and a
// byte flipped while writing with verify, each leave the files exactly as
// they were before the call (no output, no temp file).
#include "rewrite/dequantize.h"

#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "io/fault_env.h"
#include "io/mem_env.h"
#include "quant/elements.h"

namespace zerofold::rewrite {
namespace {

TEST_CASE("WithoutMember: middle, last, first, only, absent") {
  CHECK(*WithoutMember("{\n  \"a\": 1,\n  \"q\": {\"x\": [1, 2]},\n  \"b\": 2\n}", "q") == "{\n  \"a\": 1,\n  \"b\": 2\n}");
  CHECK(*WithoutMember("{\n  \"a\": 1,\n  \"q\": {\"x\": \"}\"}\n}\n", "q") == "{\n  \"a\": 1\n}\n");
  CHECK(*WithoutMember("{\"q\": 1, \"a\": 2}", "q") == "{\"a\": 2}");
  CHECK(*WithoutMember(" { \"q\": {} } ", "q") == " { } ");
  CHECK(*WithoutMember("{\"a\": 2}", "q") == "{\"a\": 2}");
  CHECK(WithoutMember("[1]", "q").status().code() == Code::kCorrupt);
}

// A safetensors file of one tensor.
std::vector<std::byte> OneTensor(const std::string& name, const char* dtype, const std::string& shape,
                                 const std::vector<std::byte>& data) {
  std::string header = "{\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
                       ",\"data_offsets\":[0," + std::to_string(data.size()) + "]}}";
  while (header.size() % 8 != 0) header += ' ';
  std::vector<std::byte> out(8);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

using Files = std::map<std::string, std::vector<std::byte>>;

Files Snapshot(const io::MemEnv& mem) {
  Files out;
  for (const std::string& f : mem.Files()) out[f] = mem.GetFile(f).value();
  return out;
}

// in/: w.weight F8_E4M3 [130, 3] (0x38 = 1.0 everywhere) in one shard, its
// weight_scale_inv [2, 1] = {0.5, 4} in the other.
void Setup(io::MemEnv& mem) {
  mem.SetFile("in/model-00001-of-00002.safetensors",
              OneTensor("w.weight", "F8_E4M3", "[130,3]", std::vector<std::byte>(390, std::byte{0x38})));
  std::vector<std::byte> scale(8);
  const float s[2] = {0.5f, 4.0f};
  std::memcpy(scale.data(), s, 8);
  mem.SetFile("in/model-00002-of-00002.safetensors", OneTensor("w.weight_scale_inv", "F32", "[2,1]", scale));
  mem.SetFile("in/model.safetensors.index.json",
              "{\"metadata\":{},\"weight_map\":{\"w.weight\":\"model-00001-of-00002.safetensors\","
              "\"w.weight_scale_inv\":\"model-00002-of-00002.safetensors\"}}");
  mem.SetFile("in/config.json", "{\"a\": 1, \"quantization_config\": {\"quant_method\": \"fp8\", "
                                "\"weight_block_size\": [128, 128]}}");
}

ConvertOptions Options(bool verify) {
  ConvertOptions o;
  o.folder = true;
  o.verify = verify;
  o.buffer_bytes = 4096;
  return o;
}

TEST_CASE("Dequantize: an FP8 block folder into a folder, every element") {
  io::MemEnv mem;
  Setup(mem);
  Result<DequantizeReport> r =
      Dequantize(&mem, "in", "out", Options(true), quant::Target::kBFloat16, output::ShardFormat::kSafetensors);
  REQUIRE(r.ok());
  CHECK(r->groups == 1);
  CHECK(r->convert.verified_tensors == 1);
  CHECK(std::string(reinterpret_cast<const char*>(mem.GetFile("out/config.json")->data()),
                    mem.GetFile("out/config.json")->size()) == "{\"a\": 1}");
  std::vector<std::byte> out = *mem.GetFile("out/model.safetensors");
  uint64_t n;
  std::memcpy(&n, out.data(), 8);
  REQUIRE(out.size() == 8 + n + 130 * 3 * 2);
  for (size_t i = 0; i < 130 * 3; ++i) {
    uint16_t b;
    std::memcpy(&b, out.data() + 8 + n + 2 * i, 2);
    CHECK(b == quant::RoundToBFloat16(i / 3 < 128 ? 0.5f : 4.0f));  // rows 128, 129: the partial block
  }
}

TEST_CASE("Dequantize: a failed read or a flipped byte (verify) leaves nothing") {
  io::MemEnv mem;
  Setup(mem);
  const Files before = Snapshot(mem);
  io::FaultEnv probe(&mem);
  REQUIRE(Dequantize(&probe, "in", "out", Options(false), quant::Target::kFloat32, output::ShardFormat::kSafetensors)
              .ok());
  const uint64_t reads = probe.reads();
  REQUIRE(reads > 4);
  for (uint64_t k = 1; k <= reads; ++k) {
    io::MemEnv m;
    Setup(m);
    io::FaultEnv fault(&m);
    fault.FailRead(k);
    CAPTURE(k);
    CHECK(!Dequantize(&fault, "in", "out", Options(false), quant::Target::kFloat32, output::ShardFormat::kSafetensors)
               .ok());
    CHECK(Snapshot(m) == before);
  }
  for (uint64_t k : {uint64_t{0}, uint64_t{200}, uint64_t{1000}}) {
    io::MemEnv m;
    Setup(m);
    io::FaultEnv fault(&m);
    fault.FlipWrittenByte(k);
    CAPTURE(k);
    Result<DequantizeReport> r =
        Dequantize(&fault, "in", "out", Options(true), quant::Target::kFloat32, output::ShardFormat::kSafetensors);
    CHECK(r.status().code() == Code::kCorrupt);
    CHECK(Snapshot(m) == before);
  }
}

}  // namespace
}  // namespace zerofold::rewrite
